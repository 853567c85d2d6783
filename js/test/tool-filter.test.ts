// The panel's state filters against the summary: "Enabled" counts what the agent gets.
import assert from "node:assert/strict";
import { test } from "node:test";
import { matchesFilter } from "../src/tool_config/tool-config-panel-row";
import type { ToolVerdict } from "../src/tool_config/tool-config-panel-traits";

const on = { on: true, state: "core_enabled" } as unknown as ToolVerdict;
const off = { on: false, state: "agent_disabled" } as unknown as ToolVerdict;
const global = { on: false, state: "globally_disabled" } as unknown as ToolVerdict;

test("a switched-on tool the model cannot use is not counted as enabled", () => {
  // Five switched on, one of them filtered out by the model's capabilities: the summary
  // says 4 enabled, and so must the "Enabled" filter.
  const tools = [
    [on, true],
    [on, true],
    [on, true],
    [on, true],
    [on, false],
  ] as const;
  assert.equal(tools.filter(([verdict, final]) => matchesFilter("enabled", verdict, final)).length, 4);
  assert.equal(tools.filter(([verdict, final]) => matchesFilter("all", verdict, final)).length, 5);
});

test("off and globally disabled keep their meaning", () => {
  assert.equal(matchesFilter("off", off, false), true);
  assert.equal(matchesFilter("off", global, false), false);
  assert.equal(matchesFilter("globally_disabled", global, false), true);
  assert.equal(matchesFilter("enabled", off, false), false);
});
