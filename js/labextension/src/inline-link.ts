/**
 * The page's end of a kernel's inline completion link (./inline-completion.ts): the
 * answers of its requests as they stream in, by request id; a cancelled or unknown
 * request's late messages are dropped, never shown. No JupyterLab code: unit-tested in
 * js/test/inline-link.test.ts.
 */
import type { Kernel } from "@jupyterlab/services";

/** The comm the kernel opens (neta_nb/runtime/inline_completion/link.py's COMM_TARGET). */
export const COMM_TARGET = "neta_nb.inline_completion";
const MAX_ERROR_CHARS = 800;

/** A code cell's outputs, as far as {@link cellError} reads them. */
export interface CellOutputs {
  length: number;
  get(index: number): { type: string; toJSON(): unknown };
}

/** What the kernel said at switch-on. */
export interface LinkSettings {
  debounce_ms: number;
  max_tokens: number;
  markdown: boolean;
  model: string;
}

/** One request's answer as it streams in. */
export class Answer {
  text = "";
  done = false;
  error: string | null = null;
  cancelled = false;
  private wake: (() => void) | null = null;

  /** Resolves at the next change (text, end, cancel). */
  changed(): Promise<void> {
    if (this.done || this.cancelled) return Promise.resolve();
    return new Promise((resolve) => {
      this.wake = resolve;
    });
  }

  notify(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }
}

/** Longest a request waits for its comm's subshell (a kernel that never answers the
 * subshell's creation must not hold completion back for good). */
export const SUBSHELL_WAIT_MS = 3000;

/** What {@link subshellReady} reads of a kernel and of a comm: JupyterLab's comms over
 * subshells (`@jupyterlab/services` 7.4 and later; absent before). */
export interface SubshellKernel {
  readonly info: Promise<unknown>;
  readonly supportsSubshells?: boolean;
}

export interface SubshellComm {
  readonly subshellStarted?: Promise<void>;
  readonly commsOverSubshells?: string;
}

/** Resolves once the comm's messages go to a subshell of their own, where JupyterLab puts
 * comms on subshells and the kernel has them (ipykernel 7) — so a request is answered
 * while a cell runs instead of waiting behind it on the main shell; at once where there
 * is none, and after {@link SUBSHELL_WAIT_MS} at the latest. JupyterLab creates the
 * subshell after the comm opens, asynchronously: a request sent before then would go to
 * the main shell. */
export async function subshellReady(kernel: SubshellKernel, comm: SubshellComm, waitMs = SUBSHELL_WAIT_MS): Promise<void> {
  const started = comm.subshellStarted;
  if (!started || comm.commsOverSubshells === "disabled") return;
  try {
    await kernel.info;
  } catch {
    return;
  }
  if (!kernel.supportsSubshells) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, waitMs);
  });
  try {
    await Promise.race([started.catch(() => undefined), bound]);
  } finally {
    clearTimeout(timer);
  }
}

/** The page's end of one kernel's switch-on. */
export class KernelLink {
  private readonly answers = new Map<string, Answer>();

  constructor(
    readonly comm: Kernel.IComm,
    readonly settings: LinkSettings,
    /** Resolves when requests may be sent: see {@link subshellReady}. */
    readonly ready: Promise<void> = Promise.resolve(),
  ) {}

  ask(id: string, request: Record<string, unknown>): Answer {
    const answer = new Answer();
    this.answers.set(id, answer);
    this.comm.send({ kind: "complete", id, ...request } as never);
    return answer;
  }

  cancel(id: string): void {
    const answer = this.answers.get(id);
    if (!answer || answer.done) return;
    answer.cancelled = true;
    this.answers.delete(id);
    answer.notify();
    if (!this.comm.isDisposed) this.comm.send({ kind: "cancel", id });
  }

  /** A message from the kernel. */
  receive(data: Record<string, unknown>): void {
    const id = typeof data.id === "string" ? data.id : "";
    const answer = this.answers.get(id);
    if (!answer) return; // cancelled or unknown: never shown
    if (data.kind === "chunk" && typeof data.text === "string") answer.text += data.text;
    else if (data.kind === "done") answer.done = true;
    else if (data.kind === "error") {
      answer.error = typeof data.message === "string" ? data.message : "inline completion failed";
      answer.done = true;
    }
    if (answer.done) this.answers.delete(id);
    answer.notify();
  }

  /** The comm closed (`.off()`, a restart): every answer ends. */
  close(): void {
    for (const answer of this.answers.values()) {
      answer.cancelled = true;
      answer.notify();
    }
    this.answers.clear();
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A code cell's error output, as `ename: evalue` and the traceback's last lines. */
export function cellError(outputs: CellOutputs): string {
  for (let i = 0; i < outputs.length; i++) {
    const output = outputs.get(i);
    if (output.type !== "error") continue;
    const json = output.toJSON() as { ename?: string; evalue?: string; traceback?: string[] };
    // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI colour codes of a traceback
    const plain = (json.traceback ?? []).map((line) => line.replace(/\u001b\[[0-9;]*m/g, ""));
    const text = [`${json.ename ?? "Error"}: ${json.evalue ?? ""}`, ...plain.slice(-6)].join("\n");
    return text.slice(0, MAX_ERROR_CHARS);
  }
  return "";
}
