/**
 * A tool call (seed 000 §5): name or label, status (waiting for approval / running / done /
 * failed / rejected / cancelled), and an
 * expandable body with the arguments and the result. Simpler than the skill card: no
 * progress. The result is sanitized markdown, or pretty JSON when it parses as JSON.
 */
import "./tool-card.css";
import { element, makeToggle, setModifier } from "./dom";
import { normalizeLang, t, type Lang } from "./i18n";
import { setMarkdown } from "./markdown";
import {
  createStatusIcon,
  normalizeRunStatus,
  RUN_STATUS_LABEL,
  RUN_STATUSES,
  runStatusTagClass,
  type RunStatus,
} from "./status-icon";
import type { Component, ComponentOptions } from "./types";

export interface ToolCardState {
  name: string;
  label: string;
  status: RunStatus;
  args: Record<string, unknown>;
  result: string | null;
  expanded: boolean;
  lang: Lang;
}

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

export function createToolCard(el: HTMLElement, options: ComponentOptions<ToolCardState> = {}): Component<ToolCardState> {
  const state: ToolCardState = {
    name: "",
    label: "",
    status: "running",
    args: {},
    result: null,
    expanded: false,
    lang: normalizeLang(options.lang),
  };

  const root = element("div", "neta-root neta-card neta-tool-card");
  const header = element("div", "neta-card-header neta-tool-header");
  const icon = createStatusIcon();
  const label = element("span", "neta-title neta-tool-label");
  const name = element("code", "neta-tool-name");
  const tag = element("span", "neta-tag neta-tool-tag");
  const chevron = element("span", "neta-chevron");
  header.append(icon.node, label, name, tag, chevron);

  const collapsible = element("div", "neta-collapsible neta-tool-body");
  const inner = element("div", "neta-collapsible-inner");
  const body = element("div", "neta-tool-sections");
  const argsTitle = element("div", "neta-tool-section-title");
  const argsView = element("pre", "neta-tool-args");
  const resultTitle = element("div", "neta-tool-section-title");
  const resultView = element("div", "neta-tool-result neta-markdown");
  body.append(argsTitle, argsView, resultTitle, resultView);
  inner.append(body);
  collapsible.append(inner);
  root.append(header, collapsible);
  el.append(root);

  const removeToggle = makeToggle(header, () => {
    state.expanded = !state.expanded;
    render();
    options.onUserChange?.({ expanded: state.expanded });
  });

  let renderedResult: string | null | undefined;
  let renderedArgs = "";

  function render(): void {
    const lang = state.lang;
    root.lang = lang;
    setModifier(root, "neta-tool-card-", RUN_STATUSES, state.status);
    root.classList.toggle("neta-is-collapsed", !state.expanded);
    icon.set(state.status);
    label.textContent = state.label || state.name;
    name.textContent = state.name;
    name.hidden = !state.label || state.label === state.name;
    tag.textContent = t(lang, RUN_STATUS_LABEL[state.status]);
    tag.className = `neta-tag neta-tool-tag${runStatusTagClass(state.status)}`;
    header.setAttribute("aria-expanded", String(state.expanded));
    collapsible.classList.toggle("neta-is-closed", !state.expanded);

    argsTitle.textContent = t(lang, "arguments");
    const hasArgs = state.args && Object.keys(state.args).length > 0;
    const argsText = hasArgs ? JSON.stringify(state.args, null, 2) : t(lang, "no_arguments");
    if (argsText !== renderedArgs) {
      argsView.textContent = argsText;
      renderedArgs = argsText;
    }
    argsView.classList.toggle("neta-is-empty", !hasArgs);

    resultTitle.textContent = t(lang, "result");
    const hasResult = typeof state.result === "string";
    resultTitle.hidden = !hasResult;
    resultView.hidden = !hasResult;
    if (state.result !== renderedResult) {
      renderedResult = state.result;
      if (hasResult) {
        const json = asJson(state.result as string);
        if (json !== null) {
          const pre = element("pre");
          pre.append(element("code", undefined, json));
          resultView.replaceChildren(pre);
        } else {
          setMarkdown(resultView, state.result as string);
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
      if (patch.args !== undefined) state.args = patch.args && typeof patch.args === "object" ? patch.args : {};
      if (patch.result !== undefined) state.result = patch.result;
      if (patch.expanded !== undefined) state.expanded = Boolean(patch.expanded);
      if (patch.lang !== undefined) state.lang = normalizeLang(patch.lang);
      render();
    },
    destroy() {
      removeToggle();
      root.remove();
    },
  };
}
