// An accepted change undone with its card's Undo stays undone when its message is drawn
// again (a long chat releases messages far from the reader and redraws them), and a
// rewind no longer counts it among the changes to put back.
import { closeWindow } from "./support/dom-env";
import assert from "node:assert/strict";
import { after, test } from "node:test";
import { CELL_EDIT_TYPE } from "../src/cards/cell-edit-card";
import { createRichOutput, type DisplayItem } from "../src/rich-output";

after(closeWindow);

const ACCEPTED = {
  kind: "edit",
  cell_id: "c1",
  before: "x = 1",
  after: "x = 2",
  diff: ["--- cell c1", "+++ cell c1", "@@ -1 +1 @@", "-x = 1", "+x = 2"],
  decision: "accepted",
};

test("a card undone on the page is drawn again undone, without its Undo", async () => {
  const item: DisplayItem = { media_type: CELL_EDIT_TYPE, data: null, text: JSON.stringify(ACCEPTED) };
  const asked: [string, unknown][] = [];
  const page = document.createElement("div");
  document.body.append(page);
  // The notebook bridge, as the page's extension answers: the undo is made.
  page.addEventListener("neta-nb-notebook", (event) => {
    const detail = (event as CustomEvent).detail;
    detail.handled = true;
    asked.push([detail.op, detail.args]);
    detail.respond({ ok: true, result: {} });
  });
  const first = createRichOutput();
  first.set([item], "en");
  page.append(first.node);
  const undo = first.node.querySelector<HTMLButtonElement>(".neta-cell-edit-undo");
  assert.ok(undo);
  undo.click();
  await new Promise((resolve) => setTimeout(resolve, 0));
  // (The card's cell name asks where the cell is: `locate`.)
  assert.deepEqual(asked.filter(([op]) => op !== "locate"), [["undo", { cell_id: "c1", before: "x = 1", after: "x = 2" }]]);
  assert.equal(first.node.querySelector(".neta-cell-edit")?.getAttribute("data-decision"), "undone");

  const again = createRichOutput();
  again.set([item], "en");
  const card = again.node.querySelector(".neta-cell-edit");
  assert.equal(card?.getAttribute("data-decision"), "undone");
  assert.equal(again.node.querySelector(".neta-cell-edit-undo"), null);
  assert.equal(JSON.parse(item.text ?? "").decision, "undone");
  page.remove();
});

test("a card undone where the cell's outputs went says so when drawn again", async () => {
  const item: DisplayItem = { media_type: CELL_EDIT_TYPE, data: null, text: JSON.stringify(ACCEPTED) };
  const page = document.createElement("div");
  document.body.append(page);
  page.addEventListener("neta-nb-notebook", (event) => {
    const detail = (event as CustomEvent).detail;
    detail.handled = true;
    detail.respond({ ok: true, result: detail.op === "undo" ? { outputs_cleared: true } : {} });
  });
  const first = createRichOutput();
  first.set([item], "en");
  page.append(first.node);
  first.node.querySelector<HTMLButtonElement>(".neta-cell-edit-undo")?.click();
  await new Promise((resolve) => setTimeout(resolve, 0));
  const note = (root: Element) => root.querySelector(".neta-cell-edit-outputs-cleared")?.textContent;
  assert.equal(note(first.node), "its outputs, of the accepted code, were cleared");
  const again = createRichOutput();
  again.set([item], "en");
  assert.equal(again.node.querySelector(".neta-cell-edit")?.getAttribute("data-decision"), "undone");
  assert.equal(note(again.node), "its outputs, of the accepted code, were cleared");
  page.remove();
});
