// A static form's display update heard by a page that does not map its display id (a page
// reloaded while the kernel ran) goes into the output after each view of the widget model
// the id names, and only where that output is a static form whose data differ.
import assert from "node:assert/strict";
import { test } from "node:test";
import { liveModelFor, olderThan } from "../labextension/src/reattach";
import { formViewModel, writeForm } from "../labextension/src/static-forms";

const VIEW = "application/vnd.jupyter.widget-view+json";

interface Output {
  output_type: string;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

/** The parts of an output area model `writeForm` uses, recording every `set`. */
function outputs(items: Output[]) {
  const sets: number[] = [];
  const model = {
    get length() {
      return items.length;
    },
    get: (index: number) => ({ type: items[index].output_type, data: items[index].data }),
    set: (index: number, value: Output) => {
      sets.push(index);
      items[index] = value;
    },
  };
  return { model: model as unknown as Parameters<typeof writeForm>[0], items, sets };
}

const view = (modelId: string): Output => ({ output_type: "display_data", data: { [VIEW]: { model_id: modelId, version_major: 2, version_minor: 1 }, "text/plain": "" }, metadata: {} });
const form = (words: string): Output => ({ output_type: "display_data", data: { "text/html": `<div class="neta-static-form">${words}</div>`, "text/plain": words }, metadata: {} });

test("the display id of a form names the view it follows", () => {
  assert.equal(formViewModel("neta-form:abc123:9f00"), "abc123");
  assert.equal(formViewModel("9f00aa"), null); // another display
  assert.equal(formViewModel("neta-form::9f00"), null);
  assert.equal(formViewModel(undefined), null);
});

test("an update goes into the form after each view of its model", () => {
  const { model, items, sets } = outputs([view("a"), form("old"), view("b"), form("other"), view("a"), form("old")]);
  const fresh = form("the last answer").data;
  assert.equal(writeForm(model, "a", fresh, {}), 2);
  assert.deepEqual(sets, [1, 5]);
  assert.deepEqual(items[1].data, fresh);
  assert.deepEqual(items[3].data, form("other").data); // another widget's form stays
  // Heard again (the page mapped it too, or nothing changed): nothing is written.
  assert.equal(writeForm(model, "a", fresh, {}), 0);
  assert.deepEqual(sets, [1, 5]);
});

test("an output after the view that is no static form is left alone", () => {
  const text: Output = { output_type: "stream", data: {}, metadata: {} };
  const html: Output = { output_type: "display_data", data: { "text/html": "<b>a table</b>" }, metadata: {} };
  for (const after of [text, html]) {
    const { model, sets } = outputs([view("a"), after]);
    assert.equal(writeForm(model, "a", form("new").data, {}), 0);
    assert.deepEqual(sets, []);
  }
});

test("a cell's live widget is the one its latest run displayed", () => {
  const registry = new Map([
    ["older", { "cell-1": 2, "cell-2": 3 }],
    ["newer", { "cell-2": 5 }],
    ["twin-a", { "cell-3": 6 }],
    ["twin-b", { "cell-3": 6 }],
  ]);
  assert.equal(liveModelFor("cell-2", registry), "newer");
  assert.equal(liveModelFor("cell-1", registry), "older");
  assert.equal(liveModelFor("cell-3", registry), null); // one run, two widgets: which is which?
  assert.equal(liveModelFor("cell-4", registry), null);
  assert.equal(liveModelFor("cell-1", undefined), null); // no neta_nb widget on the page
  assert.equal(olderThan("older", "newer", "cell-2", registry), true);
  assert.equal(olderThan("newer", "newer", "cell-2", registry), false);
  assert.equal(olderThan("gone", "newer", "cell-2", registry), false); // not live: no view
});
