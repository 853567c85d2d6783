/**
 * The line under a traced call's card: where the call is in the user's traces (its
 * OpenTelemetry trace and span ids, neta_nb/runtime/tracing/tracing.py), with buttons that copy
 * either id to paste into Jaeger, Tempo, Honeycomb, Logfire or Langfuse. Hidden when the
 * call was not traced.
 */
import "./trace-line.css";
import { element, suppressNotebookShortcuts } from "../dom";
import { t, type Lang } from "../i18n";

/** Python twin: `TraceIds` in widgets/chat/wire.py (hex ids, as OpenTelemetry prints them). */
export interface TraceIds {
  trace_id: string;
  span_id: string;
}

/** How long a button says "Copied". */
const COPIED_MS = 1500;

export function createTraceLine(): { root: HTMLElement; set(ids: TraceIds | null, lang: Lang): void; destroy(): void } {
  const root = element("div", "neta-trace-line");
  const title = element("span", "neta-trace-title");
  const ids = element("code", "neta-trace-ids");
  const copyTrace = suppressNotebookShortcuts(element("button", "neta-trace-copy"));
  const copySpan = suppressNotebookShortcuts(element("button", "neta-trace-copy"));
  copyTrace.type = copySpan.type = "button";
  root.append(title, ids, copyTrace, copySpan);
  root.hidden = true;
  let current: TraceIds | null = null;
  let lang: Lang = "en";
  const timers = new Set<ReturnType<typeof setTimeout>>();

  const labels = () => {
    copyTrace.textContent = t(lang, "copy_trace_id");
    copySpan.textContent = t(lang, "copy_span_id");
  };
  const copy = (button: HTMLButtonElement, text: () => string | undefined) => (event: Event) => {
    event.stopPropagation(); // the card's header toggles on click; this is not it
    const value = text();
    if (!value) return;
    // The clipboard API needs a secure context (JupyterLab on localhost or https is one);
    // where it is missing the ids stay selectable in the line itself.
    void navigator.clipboard?.writeText(value).then(() => {
      button.textContent = t(lang, "copied");
      const timer = setTimeout(() => {
        timers.delete(timer);
        labels();
      }, COPIED_MS);
      timers.add(timer);
    }, () => undefined);
  };
  copyTrace.addEventListener("click", copy(copyTrace, () => current?.trace_id));
  copySpan.addEventListener("click", copy(copySpan, () => current?.span_id));

  return {
    root,
    set(next, nextLang) {
      lang = nextLang;
      const valid = next && typeof next.trace_id === "string" && typeof next.span_id === "string" ? next : null;
      current = valid;
      root.hidden = valid === null;
      title.textContent = t(lang, "trace_label");
      ids.textContent = valid ? `${valid.trace_id} · ${valid.span_id}` : "";
      labels();
    },
    destroy() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
    },
  };
}
