/**
 * The pace at which streamed text appears on the page.
 *
 * The kernel sends streamed text in batches (see neta_nb/widgets/streaming.py): every
 * Jupyter message carries ~650 bytes of envelope, so text alone goes at most every 0.5 s
 * unless a few KB are pending, and a change of structure within 0.1 s. Drawn as they
 * arrive, batches would make the answer jump a phrase at a time; instead each batch is
 * revealed steadily until the next one is likely to arrive — over the time the last one
 * took to come, frame by frame — so the text flows as it streamed, a fraction of a second
 * behind. The whole text is drawn at once when the stream ends.
 */

/** Milliseconds over which a batch is revealed when the pace of arrivals is not known yet. */
export const REVEAL_MS = 100;

/** The longest span a batch is revealed over: arrivals further apart are a pause. Twice
 * the kernel's text wait (0.5 s), so a batch that comes a little late still flows. */
export const MAX_REVEAL_MS = 1000;

/** The longest frame gap counted: a tab that was hidden resumes at the pace, not at once. */
const MAX_FRAME_MS = 50;

export class RevealPace {
  /** Characters shown so far. */
  private shown = 0;
  private held = 0;
  /** Characters per millisecond, set when text arrives: what is not shown yet, over a span. */
  private rate = 0;
  private lastFrame: number | null = null;
  /** When the last batch of text arrived (ms, the clock's), `null` before the first. */
  private lastArrival: number | null = null;
  /** The span the last batch is revealed over. */
  private batchSpan: number;
  /** Text arrived in the task running now: later appends of it are the same batch. */
  private inBatch = false;

  constructor(
    private readonly span: number = REVEAL_MS,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.batchSpan = span;
  }

  /** The text held now is `length` characters long (it grew, or started over shorter). */
  hold(length: number): void {
    if (length < this.shown) this.shown = length;
    if (length !== this.held) {
      if (!this.inBatch) {
        // A batch's operations are applied in one go, so one task is one batch.
        this.inBatch = true;
        queueMicrotask(() => {
          this.inBatch = false;
        });
        const now = this.clock();
        const gap = this.lastArrival === null ? Infinity : now - this.lastArrival;
        this.lastArrival = now;
        // Reveal what is new until the next batch likely comes: as long as this one took.
        this.batchSpan = gap <= MAX_REVEAL_MS ? Math.max(gap, this.span) : this.span;
      }
      this.rate = (length - this.shown) / this.batchSpan;
    }
    this.held = length;
  }

  /** Show everything held from now on (a snapshot, the final text). */
  showAll(length: number): void {
    this.held = this.shown = length;
    this.rate = 0;
    this.lastFrame = null;
  }

  /** Whether text is held that is not shown yet (another frame is wanted). */
  get behind(): boolean {
    return this.shown < this.held;
  }

  /** How many characters to show at the frame drawn at `now` (ms, a frame's timestamp). */
  frame(now: number): number {
    const elapsed = this.lastFrame === null ? 1000 / 60 : Math.min(now - this.lastFrame, MAX_FRAME_MS);
    this.lastFrame = now;
    const step = Math.max(1, Math.ceil(this.rate * Math.max(elapsed, 0)));
    this.shown = Math.min(this.held, this.shown + step);
    if (!this.behind) this.lastFrame = null; // the next batch starts a fresh run of frames
    return this.shown;
  }
}

/** `length`, moved past a UTF-16 high surrogate so that a cut never splits a character. */
export function wholeCharacters(text: string, length: number): number {
  if (length <= 0 || length >= text.length) return Math.max(0, Math.min(length, text.length));
  const code = text.charCodeAt(length - 1);
  return code >= 0xd800 && code <= 0xdbff ? length + 1 : length;
}
