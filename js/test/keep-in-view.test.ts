// The geometry that decides whether a running turn is on screen and how far to scroll to
// bring it there (src/chat/keep-in-view.ts): what is visible of a box inside the boxes
// that clip it, when that is enough to watch a turn, and the "nearest" scroll.
import assert from "node:assert/strict";
import { test } from "node:test";
import { nearestScroll, showsEnough, visibleHeight } from "../src/chat/keep-in-view";

test("what shows of a box is what lies inside every box that clips it", () => {
  const notebook = { top: 90, bottom: 1070 };
  const window = { top: 0, bottom: 1100 };
  assert.equal(visibleHeight({ top: 200, bottom: 700 }, [window, notebook]), 500);
  // Above the notebook's viewport (Run All scrolled to the last cell): only its foot.
  assert.equal(visibleHeight({ top: -434, bottom: 95 }, [window, notebook]), 5);
  assert.equal(visibleHeight({ top: -900, bottom: -300 }, [window, notebook]), 0);
  assert.equal(visibleHeight({ top: 1000, bottom: 1600 }, [window, notebook]), 70);
  // A clip of no height (a collapsed panel) hides everything.
  assert.equal(visibleHeight({ top: 200, bottom: 700 }, [{ top: 0, bottom: 0 }]), 0);
  assert.equal(visibleHeight({ top: 200, bottom: 700 }, []), 500);
});

test("half a conversation, or 200 px of a tall one, is enough to watch a turn", () => {
  assert.equal(showsEnough(150, 300), true);
  assert.equal(showsEnough(149, 300), false);
  assert.equal(showsEnough(200, 500), true);
  assert.equal(showsEnough(200, 800), true);
  assert.equal(showsEnough(199, 800), false);
  assert.equal(showsEnough(0, 0), false); // not drawn
  assert.equal(showsEnough(5, 497), false); // only the edge of it
});

test("the nearest scroll moves a box just inside the view, or not at all", () => {
  const view = { top: 100, bottom: 1000 };
  // Inside (with the margin): nothing.
  assert.equal(nearestScroll({ top: 200, bottom: 800 }, view), 0);
  assert.equal(nearestScroll({ top: 108, bottom: 992 }, view), 0);
  // Above: its top comes to the top (scrolling up is negative).
  assert.equal(nearestScroll({ top: -500, bottom: 140 }, view), -608);
  // Below: its bottom comes to the bottom.
  assert.equal(nearestScroll({ top: 900, bottom: 1500 }, view), 508);
  // Taller than the view: its top at the top, from below as from above.
  assert.equal(nearestScroll({ top: 1200, bottom: 2400 }, view), 1092);
  assert.equal(nearestScroll({ top: -2000, bottom: 2400 }, view), -2108);
  assert.equal(nearestScroll({ top: 50, bottom: 500 }, view, 0), -50);
});
