// The reveal pace of streamed text: each batch appears steadily until the next one is
// likely to arrive, the pace follows the arrivals, a hidden tab resumes at the pace, and a
// cut never splits a character.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_REVEAL_MS, REVEAL_MS, RevealPace, wholeCharacters } from "../src/reveal";

/** Frames at 60 Hz from `start` until the pace has caught up: the lengths shown. */
function frames(pace: RevealPace, start: number, limit = 1000): number[] {
  const shown: number[] = [];
  for (let n = 1; pace.behind && n <= limit; n += 1) shown.push(pace.frame(start + (n * 1000) / 60));
  return shown;
}

test("a batch is revealed steadily over about the reveal span", () => {
  const pace = new RevealPace();
  pace.hold(600);
  const shown = frames(pace, 0);
  assert.equal(shown.at(-1), 600);
  // ~100 ms at 60 Hz: six or seven frames, each a similar step, never backwards.
  assert.ok(shown.length >= 6 && shown.length <= 7, `${shown.length} frames`);
  const steps = shown.map((length, i) => length - (i ? shown[i - 1] : 0));
  assert.ok(steps.every((step) => step > 0));
  assert.ok(Math.max(...steps.slice(0, -1)) - Math.min(...steps.slice(0, -1)) <= 2, String(steps));
});

test("text arriving faster than it is shown raises the pace; nothing is lost", () => {
  const pace = new RevealPace();
  pace.hold(300);
  const early = [pace.frame(16), pace.frame(33)];
  assert.ok(early[1] < 300 && early[1] > early[0]);
  pace.hold(900); // the next batch came before the first was shown
  const rest = frames(pace, 33);
  assert.equal(rest.at(-1), 900);
  // The whole backlog, not only the new batch, goes out over about one span.
  assert.ok(rest.length <= Math.ceil(REVEAL_MS / (1000 / 60)) + 1, `${rest.length} frames`);
  assert.ok(rest[0] - early[1] > early[1] - early[0], "the pace went up");
});

test("a slow trickle shows every character at once, one frame each", () => {
  const pace = new RevealPace();
  pace.hold(1);
  assert.equal(pace.frame(0), 1);
  assert.equal(pace.behind, false);
  pace.hold(3);
  assert.deepEqual(frames(pace, 500), [2, 3]);
});

/** The next task: a batch that arrives later (one batch's appends share a task). */
const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0));

/** A pace on a manual clock that revealed a first batch of 10 characters at 0, and the
 * frames that took; the clock reads `at` in the next task. */
async function afterAFirstBatch(at: number) {
  const clock = { now: 0 };
  const pace = new RevealPace(REVEAL_MS, () => clock.now);
  pace.hold(10);
  const first = frames(pace, 0);
  await nextTask();
  clock.now = at;
  return { pace, clock, first };
}

test("batches that come 0.5 s apart are each revealed over about 0.5 s", async () => {
  const { pace, first } = await afterAFirstBatch(500); // the first over the default span
  assert.ok(first.length <= 7);
  pace.hold(1010);
  const shown = frames(pace, 500);
  assert.equal(shown.at(-1), 1010);
  // ~500 ms at 60 Hz: about thirty frames, so the text flows until the next batch is due.
  assert.ok(shown.length >= 28 && shown.length <= 32, `${shown.length} frames`);
});

test("a batch applied as several appends keeps the batch's span", async () => {
  const { pace, clock } = await afterAFirstBatch(500);
  for (let part = 1; part <= 50; part += 1) {
    pace.hold(10 + part * 20); // one batch's appends, however long apart within its task
    clock.now += 1;
  }
  const shown = frames(pace, 500);
  assert.equal(shown.at(-1), 1010);
  assert.ok(shown.length >= 28 && shown.length <= 32, `${shown.length} frames`);
});

test("arrivals further apart than the longest span are a pause: the default span", async () => {
  const at = MAX_REVEAL_MS + 400;
  const { pace } = await afterAFirstBatch(at);
  pace.hold(610);
  const shown = frames(pace, at);
  assert.equal(shown.at(-1), 610);
  assert.ok(shown.length >= 6 && shown.length <= 7, `${shown.length} frames`);
});

test("after a hidden tab the backlog is not dumped in one frame", () => {
  const pace = new RevealPace();
  pace.hold(1000);
  pace.frame(0);
  const afterPause = pace.frame(10_000); // no frames for 10 s
  assert.ok(afterPause < 1000, String(afterPause));
  assert.equal(frames(pace, 10_000).at(-1), 1000);
});

test("showing everything ends the reveal; shorter text shows whole", () => {
  const pace = new RevealPace();
  pace.hold(500);
  assert.ok(pace.frame(0) < 500);
  pace.showAll(500);
  assert.equal(pace.behind, false);
  pace.hold(20); // replaced by a shorter text: nothing is left to reveal
  assert.equal(pace.behind, false);
  assert.equal(pace.frame(100), 20);
});

test("a cut never splits a surrogate pair", () => {
  const text = "ab😀cd";
  assert.equal(wholeCharacters(text, 3), 4); // inside 😀: after it
  assert.equal(wholeCharacters(text, 2), 2);
  assert.equal(wholeCharacters(text, 4), 4);
  assert.equal(wholeCharacters(text, 99), text.length);
  assert.equal(wholeCharacters(text, -1), 0);
});
