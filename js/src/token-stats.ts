/**
 * Compact token usage (seed 002 §5.3): `↑in ↓out · N calls | Context P% ●`. The realtime part
 * shows while a turn runs, the context share always; the dot is green up to 50 %, yellow up
 * to 80 %, red above. Hovering (or focusing) shows the details. The state is exactly the
 * `token_update` event plus `running` — the UI never estimates tokens.
 */
import "./token-stats.css";
import { element } from "./dom";
import { normalizeLang, t, type Lang } from "./i18n";
import type { Component, ComponentOptions } from "./types";

export interface TurnUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  api_calls: number;
}

export interface ContextUsage {
  used_tokens: number;
  max_tokens: number;
  percent: number;
}

export interface TokenStatsState {
  current: TurnUsage | null;
  context: ContextUsage | null;
  running: boolean;
  lang: Lang;
}

/** 999 → "999", 1234 → "1.2K", 12345 → "12.3K", 1_200_000 → "1.2M". */
export function formatTokens(value: number): string {
  const n = Math.max(0, Math.round(Number(value) || 0));
  if (n < 1000) return String(n);
  const [divisor, suffix] = n < 999_950 ? [1000, "K"] : n < 999_950_000 ? [1_000_000, "M"] : [1_000_000_000, "B"];
  return `${(n / divisor).toFixed(1).replace(/\.0$/, "")}${suffix}`;
}

export type ContextLevel = "ok" | "warn" | "high";

export function contextLevel(percent: number): ContextLevel {
  return percent <= 50 ? "ok" : percent <= 80 ? "warn" : "high";
}

function formatPercent(percent: number): string {
  const value = Math.max(0, Number(percent) || 0);
  return value > 0 && value < 1 ? "<1" : String(Math.round(value));
}

export function createTokenStats(el: HTMLElement, options: ComponentOptions<TokenStatsState> = {}): Component<TokenStatsState> {
  const state: TokenStatsState = { current: null, context: null, running: false, lang: normalizeLang(options.lang) };

  const root = element("div", "neta-root neta-token-stats");
  root.tabIndex = 0;
  const realtime = element("span", "neta-token-realtime");
  const input = element("span", "neta-token-in");
  const output = element("span", "neta-token-out");
  const calls = element("span", "neta-token-calls");
  realtime.append(input, output, calls);
  const divider = element("span", "neta-token-divider", "|");
  const context = element("span", "neta-token-context");
  const contextText = element("span", "neta-token-context-text");
  const dot = element("span", "neta-token-dot");
  context.append(contextText, dot);
  // The details float above everything: they live in document.body while shown, so no
  // scrolling output area clips them.
  const details = element("div", "neta-root neta-token-details");
  details.setAttribute("role", "tooltip");
  details.id = `neta-token-details-${Math.random().toString(36).slice(2)}`;
  root.setAttribute("aria-describedby", details.id);
  root.append(realtime, divider, context);
  el.append(root);

  function openDetails(): void {
    const rect = root.getBoundingClientRect();
    document.body.append(details);
    const width = details.offsetWidth;
    details.style.left = `${Math.max(4, Math.min(rect.left, window.innerWidth - width - 4))}px`;
    details.style.top = `${rect.bottom + 6}px`;
    details.classList.add("neta-is-open");
  }
  function closeDetails(): void {
    details.classList.remove("neta-is-open");
    details.remove();
  }
  const closeOnScroll = () => closeDetails();
  root.addEventListener("mouseenter", openDetails);
  root.addEventListener("focus", openDetails);
  root.addEventListener("mouseleave", closeDetails);
  root.addEventListener("blur", closeDetails);
  window.addEventListener("scroll", closeOnScroll, true);

  function detailRow(label: string, value: string): HTMLDivElement {
    const row = element("div", "neta-token-detail-row");
    row.append(element("span", "neta-token-detail-label", label), element("span", "neta-token-detail-value", value));
    return row;
  }

  function render(): void {
    const lang = state.lang;
    root.lang = lang;
    const current = state.current;
    const ctx = state.context ?? { used_tokens: 0, max_tokens: 0, percent: 0 };
    const showRealtime = state.running && current !== null;
    root.classList.toggle("neta-is-running", state.running);
    realtime.hidden = !showRealtime;
    divider.hidden = !showRealtime;
    if (current) {
      input.textContent = `↑${formatTokens(current.input_tokens)}`;
      output.textContent = `↓${formatTokens(current.output_tokens)}`;
      const count = current.api_calls ?? 0;
      calls.textContent = `· ${t(lang, count === 1 ? "calls_one" : "calls", { n: count })}`;
    }
    const percent = Number(ctx.percent) || 0;
    contextText.textContent = `${t(lang, "context")} ${formatPercent(percent)}%`;
    dot.dataset.level = contextLevel(percent);

    const rows: HTMLDivElement[] = [];
    if (current) {
      rows.push(
        detailRow(t(lang, "input_tokens"), (current.input_tokens ?? 0).toLocaleString("en-US")),
        detailRow(t(lang, "output_tokens"), (current.output_tokens ?? 0).toLocaleString("en-US")),
        detailRow(t(lang, "total_tokens"), (current.total_tokens ?? 0).toLocaleString("en-US")),
        detailRow(t(lang, "api_calls"), String(current.api_calls ?? 0)),
      );
    }
    rows.push(
      detailRow(
        t(lang, "context_used"),
        `${(ctx.used_tokens ?? 0).toLocaleString("en-US")} / ${(ctx.max_tokens ?? 0).toLocaleString("en-US")} (${formatPercent(percent)}%)`,
      ),
    );
    details.replaceChildren(...rows);
    root.setAttribute(
      "aria-label",
      rows.map((row) => `${row.children[0]?.textContent}: ${row.children[1]?.textContent}`).join("; "),
    );
  }

  render();

  return {
    update(patch) {
      if (patch.current !== undefined) state.current = patch.current;
      if (patch.context !== undefined) state.context = patch.context;
      if (patch.running !== undefined) state.running = Boolean(patch.running);
      if (patch.lang !== undefined) state.lang = normalizeLang(patch.lang);
      render();
    },
    destroy() {
      root.removeEventListener("mouseenter", openDetails);
      root.removeEventListener("focus", openDetails);
      root.removeEventListener("mouseleave", closeDetails);
      root.removeEventListener("blur", closeDetails);
      window.removeEventListener("scroll", closeOnScroll, true);
      closeDetails();
      root.remove();
    },
  };
}
