// A live widget's cells reach the page's registry (and an event) from the model's first
// moment, follow the trait, and leave with the model.
import assert from "node:assert/strict";
import { test } from "node:test";
import { announceShownIn, SHOWN_IN_EVENT, shownIn } from "../src/shown-in";

function fakeModel(state: Record<string, unknown>) {
  const listeners = new Map<string, () => void>();
  return {
    state,
    get: (name: string) => state[name],
    on: (name: string, callback: () => void) => listeners.set(name, callback),
    off: (name: string) => listeners.delete(name),
    fire: (name: string) => listeners.get(name)?.(),
    listeners,
  };
}

test("a displayed widget's cells are on the page until its model closes", () => {
  const page = new EventTarget();
  (globalThis as { document?: EventTarget }).document = page;
  const heard: unknown[] = [];
  page.addEventListener(SHOWN_IN_EVENT, (event) => heard.push((event as CustomEvent).detail));
  const model = fakeModel({ _shown_in: { model_id: "m1", cells: { c1: 3 } } });
  const forget = announceShownIn(model);
  assert.deepEqual(shownIn().get("m1"), { c1: 3 });
  model.state._shown_in = { model_id: "m1", cells: { c1: 3, c2: 5 } };
  model.fire("change:_shown_in");
  assert.deepEqual(shownIn().get("m1"), { c1: 3, c2: 5 });
  assert.deepEqual(heard, [
    { model_id: "m1", cells: { c1: 3 } },
    { model_id: "m1", cells: { c1: 3, c2: 5 } },
  ]);
  forget();
  assert.equal(shownIn().has("m1"), false);
  assert.equal(model.listeners.size, 0);
});

test("a widget no cell displayed is not on the page", () => {
  (globalThis as { document?: EventTarget }).document = new EventTarget();
  const model = fakeModel({ _shown_in: {} });
  announceShownIn(model)();
  assert.equal(shownIn().size, 0);
});
