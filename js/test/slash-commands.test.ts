// An outside agent's `/` commands in the prompt box: the command being typed at the caret,
// the commands the menu lists for it, and the prompt once one is chosen.
import assert from "node:assert/strict";
import { test } from "node:test";
import { filterCommands, slashAtCaret, withCommand } from "../src/chat/slash-commands";

const COMMANDS = [
  { name: "review", description: "Review the changes" },
  { name: "init", description: "Write AGENTS.md" },
  { name: "pr-comments", description: "Read a PR's comments" },
  { name: "Compact", description: "Shorten the context" },
];

test("a command is typed at the very start of the prompt, up to the caret", () => {
  assert.equal(slashAtCaret("/", 1), "");
  assert.equal(slashAtCaret("/rev", 4), "rev");
  assert.equal(slashAtCaret("/review", 3), "re"); // what is before the caret
  assert.equal(slashAtCaret("/review the diff", 7), "review");
  assert.equal(slashAtCaret("/review the diff", 12), null); // past the command's name
  assert.equal(slashAtCaret("/rev\niew", 8), null);
  assert.equal(slashAtCaret("see /rev", 8), null); // not at the start
  assert.equal(slashAtCaret(" /rev", 5), null);
  assert.equal(slashAtCaret("/rev", 0), null); // the caret before the slash
  assert.equal(slashAtCaret("", 0), null);
});

test("the menu lists the names starting with what is typed first, then those holding it", () => {
  assert.deepEqual(filterCommands(COMMANDS, "").map((c) => c.name), ["review", "init", "pr-comments", "Compact"]);
  assert.deepEqual(filterCommands(COMMANDS, "r").map((c) => c.name), ["review", "pr-comments"]);
  assert.deepEqual(filterCommands(COMMANDS, "com").map((c) => c.name), ["Compact", "pr-comments"]);
  assert.deepEqual(filterCommands(COMMANDS, "COMP").map((c) => c.name), ["Compact"]);
  assert.deepEqual(filterCommands(COMMANDS, "zzz"), []);
  assert.deepEqual(filterCommands([], ""), []);
});

test("a chosen command replaces what was typed of it and keeps what follows", () => {
  const review = COMMANDS[0];
  assert.deepEqual(withCommand("/", 1, review), { text: "/review ", caret: 8 });
  assert.deepEqual(withCommand("/re", 3, review), { text: "/review ", caret: 8 });
  assert.deepEqual(withCommand("/rexyz", 3, review), { text: "/review ", caret: 8 });
  assert.deepEqual(withCommand("/re  the diff", 3, review), { text: "/review the diff", caret: 8 });
  assert.deepEqual(withCommand("/re\nmore", 3, review), { text: "/review \nmore", caret: 8 });
});
