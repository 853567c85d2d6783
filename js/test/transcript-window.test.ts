// A long transcript draws only the messages near its scroller's viewport: scrolled to
// either end, or anywhere between, the list holds a bounded run of views, in order, and
// every message is still there to draw (happy-dom has no layout: a small one is given here,
// each message 100 px tall, the viewport 500 px).
import { closeWindow } from "./support/dom-env";
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { Transcript, type Nesting } from "../src/chat/chat-transcript";
import type { ChatCard, ChatItem } from "../src/chat/chat-view-traits";
import { CELL_EDIT_TYPE } from "../src/cards/cell-edit-card";

after(closeWindow);

const VIEWPORT = 500;
const MESSAGE = 100;

/** A scroller whose children's boxes are laid out one under the other. */
function laidOut(): { scroller: HTMLElement; list: HTMLElement } {
  const scroller = document.createElement("div");
  const list = document.createElement("div");
  scroller.append(list);
  document.body.append(scroller);
  let scrollTop = 0;
  const heightOf = (node: Element) =>
    (node as HTMLElement).hidden ? 0 : node.classList.contains("neta-chat-msg") ? MESSAGE : Number.parseFloat((node as HTMLElement).style.height) || 0;
  const total = () => Array.from(list.children).reduce((sum, node) => sum + heightOf(node), 0);
  Object.defineProperties(scroller, {
    clientHeight: { get: () => VIEWPORT },
    scrollHeight: { get: () => total() },
    scrollTop: {
      get: () => scrollTop,
      set: (value: number) => {
        scrollTop = Math.max(0, Math.min(value, total() - VIEWPORT));
      },
    },
  });
  scroller.getBoundingClientRect = () => ({ top: 0, bottom: VIEWPORT, height: VIEWPORT, left: 0, right: 800, width: 800, x: 0, y: 0, toJSON: () => ({}) }) as DOMRect;
  const boxOf = (node: Element): DOMRect => {
    let top = -scrollTop;
    for (const child of Array.from(list.children)) {
      if (child === node) break;
      top += heightOf(child);
    }
    const height = heightOf(node);
    return { top, bottom: top + height, height, left: 0, right: 800, width: 800, x: 0, y: top, toJSON: () => ({}) } as DOMRect;
  };
  const original = HTMLElement.prototype.getBoundingClientRect;
  HTMLElement.prototype.getBoundingClientRect = function (this: HTMLElement) {
    return this.parentElement === list ? boxOf(this) : original.call(this);
  };
  return { scroller, list };
}

const item = (n: number): ChatItem => ({ id: `m${n}`, role: "user", index: n, pos: n, text: `message ${n}` });

function shown(list: HTMLElement): number[] {
  return Array.from(list.querySelectorAll(".neta-chat-bubble")).map((node) => Number((node.textContent ?? "").split(" ")[1]));
}

function inOrder(numbers: number[]): boolean {
  return numbers.every((n, i) => i === 0 || n === (numbers[i - 1] as number) + 1);
}

test("a long transcript draws a bounded run near the viewport, wherever it is scrolled", () => {
  const { scroller, list } = laidOut();
  const live = document.createElement("div");
  const nesting = { cards: new Map() } as unknown as Nesting;
  const transcript = new Transcript(list, live, { lang: () => "en", agentName: () => "Analyst", path: [], nesting, scroller });
  for (let n = 0; n < 300; n += 1) transcript.upsert(item(n));
  scroller.scrollTop = 300 * MESSAGE; // at the bottom
  transcript.window.settle();
  const bottom = shown(list);
  assert.ok(bottom.length <= 40, `${bottom.length} drawn`);
  assert.ok(inOrder(bottom) && bottom.at(-1) === 299, String(bottom));
  assert.equal(scroller.scrollHeight, 300 * MESSAGE); // the spacers stand for the rest

  scroller.scrollTop = 0; // to the top at once (the scrollbar dragged)
  transcript.window.settle();
  transcript.window.settle();
  const top = shown(list);
  assert.ok(top.length <= 40 && top[0] === 0 && inOrder(top), String(top));

  // Step by step down the whole transcript: every message shows, in order.
  const seen = new Set<number>();
  for (let y = 0; y <= 300 * MESSAGE; y += 400) {
    scroller.scrollTop = y;
    transcript.window.settle();
    const now = shown(list);
    assert.ok(now.length <= 40 && inOrder(now), String(now));
    const first = Math.floor(scroller.scrollTop / MESSAGE);
    assert.ok(now.includes(first), `${first} not in ${now} at ${y}: ${scroller.scrollTop}`);
    for (const n of now) seen.add(n);
  }
  assert.equal(seen.size, 300);
  assert.equal(transcript.allItems().length, 300);
  assert.deepEqual(transcript.items(["m3"]), [item(3)]);
});

test("an older page is filed above without drawing it, the reader's place kept", () => {
  const { scroller, list } = laidOut();
  const live = document.createElement("div");
  const nesting = { cards: new Map() } as unknown as Nesting;
  const transcript = new Transcript(list, live, { lang: () => "en", agentName: () => "Analyst", path: [], nesting, scroller });
  for (let n = 1000; n < 1050; n += 1) transcript.upsert(item(n));
  scroller.scrollTop = 0;
  transcript.window.settle();
  const before = shown(list);
  transcript.window.keepPlace(() => {
    for (let n = 950; n < 1000; n += 1) transcript.upsert(item(n));
  });
  assert.deepEqual(shown(list), before); // nothing of the page drawn yet, nothing moved
  assert.equal(scroller.scrollTop, 50 * MESSAGE);
  assert.equal(transcript.firstIndex(), 950);
  transcript.window.settle();
  const after = shown(list);
  assert.ok(after.includes(1000) && inOrder(after) && after[0] as number < 1000, String(after));
  assert.equal(scroller.scrollTop, 50 * MESSAGE);
});

test("a streamed response's item, come after its end, is kept as the kernel's preview and length", () => {
  const list = document.createElement("div");
  const live = document.createElement("div");
  document.body.append(list, live);
  const nesting = { cards: new Map() } as unknown as Nesting;
  const transcript = new Transcript(list, live, { lang: () => "en", agentName: () => "Analyst", path: [], nesting });
  const whole = "word ".repeat(5_000); // 25,000 characters: over the 20,000 preview
  transcript.apply({ op: "live", id: "live_1" });
  transcript.apply({ op: "text", text: whole });
  transcript.apply({ op: "end", id: "m1" });
  transcript.apply({ op: "item", item: { id: "m1", role: "assistant", index: 1, pos: 1, text: null, text_chars: whole.length } });
  const [saved] = transcript.items(["m1"]) ?? [];
  assert.equal(saved?.text, whole.slice(0, 20_000));
  assert.equal(saved?.text_chars, whole.length);
  assert.equal(list.querySelectorAll(".neta-chat-msg").length, 1);
});

test("a rewind counts the accepted cell changes after its prompt, drawn or not", () => {
  const { scroller, list } = laidOut();
  const live = document.createElement("div");
  const nesting = {
    cards: new Map(),
    messageActions: {
      lang: () => "en",
      act: async () => null,
      onError: () => undefined,
      onNotebookPage: () => true,
      changesAfter: (id: string) => transcript.acceptedChangesAfter(id),
    },
  } as unknown as Nesting;
  const transcript = new Transcript(list, live, { lang: () => "en", agentName: () => "Analyst", path: [], nesting, scroller });
  transcript.upsert({ ...item(0), text: "Tidy the notebook up" });
  // 119 answers, each with a cell edit: the odd ones accepted (60), the even ones rejected.
  for (let n = 1; n < 120; n += 1) {
    const proposal = { kind: "edit", cell_id: `c${n}`, before: "x", after: "y", diff: ["-x", "+y"], decision: n % 2 ? "accepted" : "rejected" };
    const outputs = [{ media_type: CELL_EDIT_TYPE, data: null, text: JSON.stringify(proposal) }];
    const card: ChatCard = { kind: "tool", id: `call${n}`, name: "edit_cell", label: "Edit cell", status: "done", result: "ok", outputs };
    transcript.upsert({ id: `m${n}`, role: "assistant", index: n, pos: n, text: `answer ${n}`, cards: [card] });
  }
  scroller.scrollTop = 0; // the prompt on screen: the answers far below it are not drawn
  transcript.window.settle();
  assert.ok(transcript.window.drawnCount < 40, `${transcript.window.drawnCount} drawn`);
  const rewind = list.querySelector<HTMLButtonElement>('.neta-chat-msg[data-id="m0"] .neta-msg-action-rewind');
  assert.ok(rewind);
  rewind.click();
  const also = list.querySelector(".neta-msg-confirm-notebook");
  assert.equal(also?.textContent, "Also undo the notebook changes made after this point (60)");
});
