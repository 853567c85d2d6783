/**
 * A skill run (seed 002 §4): ONE DOM node from running to done or error. While running it
 * shows a progress bar and the current step; when it ends, a "view result" toggle fades in
 * in the same place (both live in one grid cell, so the card does not change height), the
 * left border changes colour by status, and the result unfolds below as sanitized markdown.
 * A long result arrives as a preview (`result_chars`: the whole one's length); a note under
 * it fetches the whole on request (`options.fetchWhole`), never written back to state.
 */
import "./skill-card.css";
import { characterCount, createCutNote, renderPlainText } from "../cut-text";
import { createCollapsible, element } from "../dom";
import { normalizeLang, t, type Lang } from "../i18n";
import { setMarkdown } from "../markdown";
import {
  normalizeRunStatus,
  RUN_STATUS_LABEL,
  RUN_STATUSES,
  runStatusTagClass,
  type RunStatus,
} from "../status-icon";
import type { Component, ComponentOptions } from "../types";
import { createCardFrame } from "./card-frame";
import { createTraceLine, type TraceIds } from "./trace-line";

export interface SkillCardState {
  name: string;
  label: string;
  status: RunStatus;
  percent: number;
  step: string | null;
  detail: string | null;
  result: string | null;
  /** The whole result's length when `result` is a preview; 0 when it is whole. */
  result_chars: number;
  /** Where the call is in the user's traces, when traced (trace-line.ts). */
  trace: TraceIds | null;
  expanded: boolean;
  lang: Lang;
}

export interface SkillCardOptions extends ComponentOptions<SkillCardState> {
  /** Fetches the whole result from the kernel. */
  fetchWhole?: () => Promise<string>;
}

/** Above this many characters a whole result is shown as plain text (see tool-card.ts). */
const MARKDOWN_LIMIT = 200_000;

export function createSkillCard(el: HTMLElement, options: SkillCardOptions = {}): Component<SkillCardState> {
  const state: SkillCardState = {
    name: "",
    label: "",
    status: "running",
    percent: 0,
    step: null,
    detail: null,
    result: null,
    result_chars: 0,
    trace: null,
    expanded: false,
    lang: normalizeLang(options.lang),
  };

  const percentText = element("span", "neta-skill-percent");
  const tag = element("span", "neta-tag neta-skill-tag");
  const frame = createCardFrame({
    kind: "skill",
    statuses: RUN_STATUSES,
    title: ["span", "neta-skill-label"],
    extras: [percentText, tag],
    ruled: true,
  });
  const { root, title: label } = frame;

  // Progress and the result toggle share one grid cell: swapping them never moves the card.
  const slot = element("div", "neta-skill-slot");
  const progress = element("div", "neta-skill-progress");
  const bar = element("div", "neta-progress");
  const fill = element("div", "neta-progress-fill");
  bar.append(fill);
  const step = element("div", "neta-skill-step");
  progress.append(bar, step);
  const toggle = element("button", "neta-skill-toggle");
  toggle.type = "button";
  slot.append(progress, toggle);

  let wholeResult: string | null = null;
  // The folded result (and its trace line) is built when the card first opens.
  const resultWrap = createCollapsible("neta-skill-result-wrap neta-is-closed");
  let body: ReturnType<typeof buildBody> | null = null;
  function buildBody() {
    const resultView = element("div", "neta-skill-result neta-markdown");
    const traceLine = createTraceLine();
    (resultWrap.root.firstElementChild as HTMLElement).append(resultView, traceLine.root);
    const resultNote = createCutNote(
      () => state.lang,
      (text) => {
        wholeResult = text;
        render();
      },
      resultView,
    );
    return { resultView, traceLine, resultNote };
  }
  root.append(slot, resultWrap.root);
  el.append(root);

  const onToggle = () => {
    state.expanded = !state.expanded;
    render();
    options.onUserChange?.({ expanded: state.expanded });
  };
  toggle.addEventListener("click", onToggle);

  let renderedResult: string | null | undefined;

  function render(): void {
    const lang = state.lang;
    const running = state.status === "running";
    const hasResult = typeof state.result === "string" && state.result.length > 0;
    frame.setLang(lang);
    frame.setStatus(state.status, state.status);
    label.textContent = state.label || state.name;
    label.title = state.name;
    const percent = Math.max(0, Math.min(100, Number(state.percent) || 0));
    percentText.textContent = running ? `${Math.round(percent)}%` : "";
    const tagKey = state.status === "done" ? "skill_done" : state.status === "error" ? "skill_error" : RUN_STATUS_LABEL[state.status];
    tag.textContent = running ? "" : t(lang, tagKey);
    tag.className = `neta-tag neta-skill-tag${runStatusTagClass(state.status)}`;
    tag.hidden = running;
    fill.style.width = `${percent}%`;
    step.textContent = state.step || state.detail || t(lang, "starting");
    progress.classList.toggle("neta-is-active", running);
    progress.setAttribute("aria-hidden", String(!running));
    const showToggle = !running && hasResult;
    toggle.classList.toggle("neta-is-active", showToggle);
    toggle.tabIndex = showToggle ? 0 : -1;
    toggle.setAttribute("aria-hidden", String(!showToggle));
    toggle.textContent = t(lang, state.expanded ? "hide_result" : "view_result");
    toggle.setAttribute("aria-expanded", String(state.expanded));
    slot.classList.toggle("neta-is-empty", !running && !hasResult);
    resultWrap.setOpen(showToggle && state.expanded);
    if (showToggle && state.expanded) body ??= buildBody();
    if (!body) return;
    const { resultView, traceLine, resultNote } = body;
    traceLine.set(state.trace, lang);
    resultNote.set(
      hasResult && state.result_chars > 0 && wholeResult === null
        ? { shown: characterCount(state.result as string), total: state.result_chars }
        : null,
      options.fetchWhole ?? null,
    );
    const shown = wholeResult ?? state.result;
    if (shown !== renderedResult) {
      renderedResult = shown;
      // A preview is shown as text: cut anywhere, its markdown would be broken.
      const preview = wholeResult === null && state.result_chars > 0;
      if (hasResult && shown !== null && (preview || shown.length > MARKDOWN_LIMIT)) {
        const plain = element("div", "neta-skill-result-plain");
        renderPlainText(plain, shown);
        resultView.replaceChildren(plain);
      } else if (hasResult && shown !== null) setMarkdown(resultView, shown);
      else resultView.replaceChildren();
    }
  }

  render();

  return {
    update(patch) {
      if (patch.name !== undefined) state.name = String(patch.name);
      if (patch.label !== undefined) state.label = String(patch.label ?? "");
      if (patch.status !== undefined) state.status = normalizeRunStatus(patch.status);
      if (patch.percent !== undefined) state.percent = Number(patch.percent) || 0;
      if (patch.step !== undefined) state.step = patch.step;
      if (patch.detail !== undefined) state.detail = patch.detail;
      if (patch.result !== undefined) {
        if (patch.result !== state.result) wholeResult = null;
        state.result = patch.result;
      }
      if (patch.trace !== undefined) state.trace = patch.trace;
      if (patch.result_chars !== undefined) state.result_chars = Number(patch.result_chars) || 0;
      if (patch.expanded !== undefined) state.expanded = Boolean(patch.expanded);
      if (patch.lang !== undefined) state.lang = normalizeLang(patch.lang);
      render();
    },
    destroy() {
      body?.resultNote.destroy();
      body?.traceLine.destroy();
      toggle.removeEventListener("click", onToggle);
      frame.destroy();
    },
  };
}
