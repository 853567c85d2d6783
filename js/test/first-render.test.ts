// What a long chat's first render draws: a cut note only under a field that was cut, and
// folded bodies (a tool's arguments and result, a skill's result, history's thinking) only
// once opened — a long transcript of whole fields draws no hidden note and no folded body.
import { closeWindow, nodeCount } from "./support/dom-env";
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { Transcript, type Nesting } from "../src/chat/chat-transcript";
import type { ChatItem } from "../src/chat/chat-view-traits";
import { createToolCard } from "../src/cards/tool-card";
import { createSkillCard } from "../src/cards/skill-card";
import { createThinkingBlock } from "../src/cards/thinking-block";

after(closeWindow);

const ANSWER = `Here is what the data says about **the sales** of the quarter.

\`\`\`python
import pandas as pd
frame = pd.read_csv("sales.csv")
frame.groupby("region").sum()
\`\`\`

| region | sales | change |
|---|---|---|
| north | 1,204 | +4% |
| south | 980 | -2% |
| east | 1,530 | +9% |

The east grows fastest; the south fell for the second quarter in a row. ${"More detail follows. ".repeat(8)}`;

/** One turn as a long session holds it: a prompt, thinking and 4 tool calls, an answer. */
function turn(n: number): ChatItem[] {
  const cards = Array.from({ length: 4 }, (_, k) => ({
    id: `call-${n}-${k}`,
    kind: "tool" as const,
    name: "run_cell",
    label: `Run step ${k}`,
    status: "done" as const,
    args: { code: `print(${k})`, cell_id: `cell-${k}` },
    result: `Step ${k} printed ${k} and a table:\n\n| a | b |\n|---|---|\n| 1 | 2 |`,
  }));
  const base = n * 3;
  return [
    { id: `u${n}`, role: "user", index: base, pos: base, text: `Question ${n}: how did the sales go?` },
    { id: `a${n}`, role: "assistant", index: base + 1, pos: base + 1, text: "", thinking: `Thinking about question ${n}. `.repeat(10), cards },
    { id: `b${n}`, role: "assistant", index: base + 2, pos: base + 2, text: ANSWER },
  ];
}

function drawn(items: ChatItem[]): HTMLElement {
  const list = document.createElement("div");
  const live = document.createElement("div");
  document.body.append(list, live);
  const nesting = { cards: new Map() } as unknown as Nesting;
  const transcript = new Transcript(list, live, { lang: () => "en", agentName: () => "Analyst", path: [], nesting });
  for (const item of items) transcript.upsert(item);
  return list;
}

test("a first render of 50 whole items draws no cut note and no folded body", () => {
  const items = Array.from({ length: 17 }, (_, n) => turn(n)).flat().slice(-50);
  const list = drawn(items);
  const nodes = nodeCount(list);
  console.log(`first render of ${items.length} items: ${nodes} nodes`);
  assert.equal(list.querySelectorAll(".neta-cut-note").length, 0);
  assert.equal(list.querySelectorAll(".neta-tool-sections").length, 0);
  assert.equal(list.querySelectorAll(".neta-trace-line").length, 0);
  // The answers themselves are drawn whole: their code and table.
  assert.equal(list.querySelectorAll(".neta-chat-text table").length, 17);
  assert.ok(nodes < 2_600, `${nodes} nodes`);
  list.remove();
});

test("a field that was cut has its note, under the preview it notes", () => {
  const [user, thinking, answer] = turn(1);
  const list = drawn([
    { ...user, text: "x".repeat(100), text_chars: 5_000 } as ChatItem,
    thinking as ChatItem,
    { ...answer, text: "y".repeat(100), text_chars: 9_000 } as ChatItem,
  ]);
  const notes = Array.from(list.querySelectorAll<HTMLElement>(".neta-cut-note"));
  assert.equal(notes.length, 2);
  assert.match(notes[0]?.textContent ?? "", /100 of 5,000/);
  assert.ok(notes[0]?.previousElementSibling?.classList.contains("neta-chat-attachments"));
  assert.match(notes[1]?.textContent ?? "", /100 of 9,000/);
  assert.ok(notes[1]?.previousElementSibling?.classList.contains("neta-chat-text"));
  list.remove();
});

test("a tool card builds its body when first opened, with the note of a cut result", () => {
  const host = document.createElement("div");
  const card = createToolCard(host, { fetchWhole: async () => "whole" });
  card.update({ name: "read", status: "done", args: { path: "a.csv" }, result: "r".repeat(50), result_chars: 800 });
  assert.equal(host.querySelector(".neta-tool-result"), null);
  assert.equal(host.querySelector(".neta-cut-note"), null);
  (host.querySelector(".neta-card-header") as HTMLElement).click();
  assert.match(host.querySelector(".neta-tool-args")?.textContent ?? "", /a\.csv/);
  assert.match(host.querySelector(".neta-tool-result")?.textContent ?? "", /^r{50}$/);
  const note = host.querySelector(".neta-cut-note") as HTMLElement;
  assert.match(note.textContent ?? "", /50 of 800/);
  assert.equal(note.hidden, false);
  // Folded again and updated: the body stays and follows.
  (host.querySelector(".neta-card-header") as HTMLElement).click();
  card.update({ result: "done in full", result_chars: 0 });
  assert.equal(host.querySelector(".neta-tool-result")?.textContent?.trim(), "done in full");
  assert.equal(note.hidden, true);
  card.destroy();
});

test("a skill card builds its result when first opened", () => {
  const host = document.createElement("div");
  const card = createSkillCard(host, {});
  card.update({ name: "profile", status: "done", result: "**all** good" });
  assert.equal(host.querySelector(".neta-skill-result"), null);
  (host.querySelector(".neta-skill-toggle") as HTMLElement).click();
  assert.equal(host.querySelector(".neta-skill-result strong")?.textContent, "all");
  card.destroy();
});

test("history's folded thinking renders its text when first opened", () => {
  const host = document.createElement("div");
  const block = createThinkingBlock(host, {});
  block.update({ text: "a *first* idea" });
  assert.equal(block.text, "a *first* idea");
  assert.equal(host.querySelector(".neta-thinking-content em"), null);
  (host.querySelector(".neta-thinking-header") as HTMLElement).click();
  assert.equal(host.querySelector(".neta-thinking-content em")?.textContent, "first");
  block.destroy();
});
