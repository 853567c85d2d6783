/**
 * A tool call (seed 000 §5): name or label, status (waiting for approval / running / done /
 * failed / rejected / cancelled), and an
 * expandable body with the arguments and the result. Simpler than the skill card: no
 * progress. The result is sanitized markdown, or pretty JSON when it parses as JSON.
 *
 * Long arguments and results arrive as previews (`args_chars` / `result_chars`: the whole
 * one's length); a note under each says so and fetches the whole on request
 * (`options.fetchWhole`), shown here and never written back to state.
 */
import "./tool-card.css";
import { characterCount, createCutNote, renderPlainText, type FetchWhole } from "../cut-text";
import { createCollapsible, element } from "../dom";
import { normalizeLang, t, type Lang } from "../i18n";
import { setMarkdown } from "../markdown";
import { createRichOutput, type DisplayItem } from "../rich-output";
import {
  normalizeRunStatus,
  RUN_STATUS_LABEL,
  RUN_STATUSES,
  runStatusTagClass,
  type RunStatus,
} from "../status-icon";
import type { Component, ComponentOptions } from "../types";
import { createCardFrame } from "./card-frame";
import { createCellName, labelAround } from "./cell-name";
import { type FileLocation, setFileLinks } from "./file-links";
import { createTraceLine, type TraceIds } from "./trace-line";

export interface ToolCardState {
  name: string;
  label: string;
  status: RunStatus;
  args: Record<string, unknown>;
  result: string | null;
  /** The whole result's length when `result` is a preview; 0 when it is whole. */
  result_chars: number;
  /** The whole arguments' JSON length when `args` is a preview (-1: too deep to measure);
   * 0 when whole. */
  args_chars: number;
  /** What the tool displayed: figures, tables (rich-output.ts). */
  outputs: DisplayItem[];
  /** Where the call is in the user's traces, when traced (trace-line.ts). */
  trace: TraceIds | null;
  /** The files it reads or changes (an outside agent's call), linked under its header. */
  locations: FileLocation[];
  expanded: boolean;
  lang: Lang;
}

export interface ToolCardOptions extends ComponentOptions<ToolCardState> {
  /** Fetches the whole `result` or `args` (as indented JSON) from the kernel. */
  fetchWhole?: (field: "result" | "args") => Promise<string>;
}

/** Above this many characters a whole result is shown as plain text: parsing megabytes as
 * markdown would freeze the page. */
const MARKDOWN_LIMIT = 200_000;

/** Pretty JSON for a result that is JSON, else null. */
function asJson(text: string): string | null {
  const trimmed = text.trim();
  if (!trimmed.startsWith("{") && !trimmed.startsWith("[")) return null;
  try {
    return JSON.stringify(JSON.parse(trimmed), null, 2);
  } catch {
    return null;
  }
}

/** The notebook tools whose `cell_id` argument names a cell of the page. */
const CELL_TOOLS = new Set(["read_notebook", "run_cell", "edit_cell", "insert_cell"]);

export function createToolCard(el: HTMLElement, options: ToolCardOptions = {}): Component<ToolCardState> {
  const state: ToolCardState = {
    name: "",
    label: "",
    status: "running",
    args: {},
    result: null,
    result_chars: 0,
    args_chars: 0,
    outputs: [],
    trace: null,
    locations: [],
    expanded: false,
    lang: normalizeLang(options.lang),
  };

  const name = element("code", "neta-tool-name");
  const tag = element("span", "neta-tag neta-tool-tag");
  // The notebook cell a notebook tool's call is about, named as the notebook shows it.
  const cell = element("span", "neta-tool-cell");
  const frame = createCardFrame({
    kind: "tool",
    statuses: RUN_STATUSES,
    title: ["span", "neta-tool-label"],
    extras: [cell, name, tag],
    onToggle: () => {
      state.expanded = !state.expanded;
      render();
      options.onUserChange?.({ expanded: state.expanded });
    },
  });
  const { root, title: label } = frame;

  const lang = () => state.lang;
  // The whole texts fetched for the current previews (null: showing the preview).
  let wholeArgs: string | null = null;
  let wholeResult: string | null = null;
  const fetcher = (field: "result" | "args"): FetchWhole | null =>
    options.fetchWhole ? () => (options.fetchWhole as NonNullable<ToolCardOptions["fetchWhole"]>)(field) : null;
  // The folded body (arguments, result, trace line) is built when the card first opens:
  // most cards of a long chat are never opened, and their bodies were most of its DOM.
  const bodyWrap = createCollapsible("neta-tool-body");
  let body: ReturnType<typeof buildBody> | null = null;
  function buildBody() {
    const sections = element("div", "neta-tool-sections");
    const argsTitle = element("div", "neta-tool-section-title");
    const argsView = element("pre", "neta-tool-args");
    const resultTitle = element("div", "neta-tool-section-title");
    const resultView = element("div", "neta-tool-result neta-markdown");
    const traceLine = createTraceLine();
    sections.append(argsTitle, argsView, resultTitle, resultView, traceLine.root);
    (bodyWrap.root.firstElementChild as HTMLElement).append(sections);
    const argsNote = createCutNote(lang, (text) => {
      wholeArgs = text;
      render();
    }, argsView);
    const resultNote = createCutNote(lang, (text) => {
      wholeResult = text;
      render();
    }, resultView);
    return { argsTitle, argsView, resultTitle, resultView, traceLine, argsNote, resultNote };
  }
  const outputs = createRichOutput();
  const files = element("div", "neta-tool-files");
  files.hidden = true;
  root.append(files, outputs.node, bodyWrap.root);
  el.append(root);

  let renderedResult: string | null | undefined;
  let renderedArgs = "";
  let renderedFiles = "[]";

  function render(): void {
    const lang = state.lang;
    frame.setLang(lang);
    frame.setStatus(state.status, state.status);
    frame.setOpen(state.expanded);
    label.textContent = state.label || state.name;
    label.title = label.textContent;
    name.textContent = state.name;
    name.hidden = !state.label || state.label === state.name;
    const cellId = CELL_TOOLS.has(state.name) && typeof state.args?.cell_id === "string" ? state.args.cell_id : null;
    if ((cellId ?? "") !== (cell.dataset.cellId ?? "") || (cellId && cell.dataset.lang !== lang)) {
      cell.dataset.cellId = cellId ?? "";
      cell.dataset.lang = lang;
      cell.replaceChildren(...(cellId ? labelAround(lang, "tool_cell", "cell", createCellName(cellId, lang)) : []));
    }
    cell.hidden = !cellId;
    tag.textContent = t(lang, RUN_STATUS_LABEL[state.status]);
    tag.className = `neta-tag neta-tool-tag${runStatusTagClass(state.status)}`;
    const shownFiles = JSON.stringify([state.locations, lang]);
    if (shownFiles !== renderedFiles) {
      renderedFiles = shownFiles;
      setFileLinks(files, state.locations, lang);
    }
    bodyWrap.setOpen(state.expanded);
    outputs.set(state.outputs, lang);
    if (state.expanded) body ??= buildBody();
    if (body) renderBody(body, lang);
  }

  function renderBody(parts: NonNullable<typeof body>, lang: Lang): void {
    const { argsTitle, argsView, resultTitle, resultView, traceLine, argsNote, resultNote } = parts;
    traceLine.set(state.trace, lang);
    argsTitle.textContent = t(lang, "arguments");
    const hasArgs = state.args && Object.keys(state.args).length > 0;
    const argsText = wholeArgs ?? (hasArgs ? JSON.stringify(state.args, null, 2) : t(lang, "no_arguments"));
    if (argsText !== renderedArgs) {
      argsView.textContent = argsText;
      renderedArgs = argsText;
    }
    argsView.classList.toggle("neta-is-empty", !hasArgs);
    // args_chars -1: shortened, but too deeply nested for the kernel to measure.
    argsNote.set(
      state.args_chars !== 0 && wholeArgs === null ? { shown: 0, total: Math.max(0, state.args_chars), kind: "args" } : null,
      fetcher("args"),
    );

    resultTitle.textContent = t(lang, "result");
    const hasResult = typeof state.result === "string";
    resultTitle.hidden = !hasResult;
    resultView.hidden = !hasResult;
    const shownResult = wholeResult ?? state.result;
    resultNote.set(
      hasResult && state.result_chars > 0 && wholeResult === null
        ? { shown: characterCount(state.result as string), total: state.result_chars }
        : null,
      fetcher("result"),
    );
    if (shownResult !== renderedResult) {
      renderedResult = shownResult;
      // A preview is shown as it is, as text: cut anywhere, its markdown or JSON would be
      // broken (an open code fence, half an object).
      const preview = wholeResult === null && state.result_chars > 0;
      if (typeof shownResult === "string" && (preview || shownResult.length > MARKDOWN_LIMIT)) {
        const plain = element("div", "neta-tool-result-plain");
        renderPlainText(plain, shownResult);
        resultView.replaceChildren(plain);
      } else if (typeof shownResult === "string") {
        const json = asJson(shownResult);
        if (json !== null) {
          const pre = element("pre");
          pre.append(element("code", undefined, json));
          resultView.replaceChildren(pre);
        } else {
          setMarkdown(resultView, shownResult);
        }
      } else {
        resultView.replaceChildren();
      }
    }
  }

  render();

  return {
    update(patch) {
      if (patch.name !== undefined) state.name = String(patch.name);
      if (patch.label !== undefined) state.label = String(patch.label ?? "");
      if (patch.status !== undefined) state.status = normalizeRunStatus(patch.status);
      if (patch.args !== undefined) {
        const args = patch.args && typeof patch.args === "object" ? patch.args : {};
        if (JSON.stringify(args) !== JSON.stringify(state.args)) wholeArgs = null;
        state.args = args;
      }
      if (patch.result !== undefined) {
        if (patch.result !== state.result) wholeResult = null;
        state.result = patch.result;
      }
      if (patch.result_chars !== undefined) state.result_chars = Number(patch.result_chars) || 0;
      if (patch.args_chars !== undefined) state.args_chars = Number(patch.args_chars) || 0;
      if (patch.outputs !== undefined) state.outputs = Array.isArray(patch.outputs) ? patch.outputs : [];
      if (patch.trace !== undefined) state.trace = patch.trace;
      if (patch.locations !== undefined) state.locations = Array.isArray(patch.locations) ? patch.locations : [];
      if (patch.expanded !== undefined) state.expanded = Boolean(patch.expanded);
      if (patch.lang !== undefined) state.lang = normalizeLang(patch.lang);
      render();
    },
    destroy() {
      body?.argsNote.destroy();
      body?.resultNote.destroy();
      body?.traceLine.destroy();
      frame.destroy();
    },
  };
}
