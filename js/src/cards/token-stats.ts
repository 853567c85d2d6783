/**
 * Compact token usage (seed 002 §5.3): `↑in ↓out · N calls | Context P% ●`. The turn's
 * figures show while it runs and stay, muted, after it ends (the last turn's); the context
 * share always shows; the dot is green up to 50 %, yellow up to 80 %, red above. Hovering
 * (or focusing) shows the details. The state is exactly the `token_update` event plus
 * `running` — the UI computes nothing itself. Figures the server did not report show as
 * unknown (`↑? ↓?`, or `↑1.2K+?` when some calls of the turn reported none), an estimated
 * context share as `~P%`, each explained in the details.
 */
import "./token-stats.css";
import { element } from "../dom";
import { normalizeLang, t, type Lang } from "../i18n";
import type { Component, ComponentOptions } from "../types";

export interface TurnUsage {
  input_tokens: number;
  output_tokens: number;
  total_tokens: number;
  api_calls: number;
  /** Calls whose response carried no usage: their tokens are unknown (absent: none). */
  unreported_calls?: number;
  /** The turn's cost in USD, sub-agents included; null: a call has no known price. */
  cost_usd?: number | null;
  /** The turn's cost by kind (input, cache_read, cache_write, output, subagents). */
  cost_split?: Record<string, number> | null;
  /** The session's cost so far, this turn included; null: unknown. */
  session_cost_usd?: number | null;
}

export interface ContextUsage {
  used_tokens: number;
  max_tokens: number;
  percent: number;
  /** Why `used_tokens` is an estimate; absent or null: reported by the provider. */
  estimate?: "unreported" | "compaction" | null;
  /** `max_tokens` is a default: nobody gave or reported this model's window. */
  window_assumed?: boolean;
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

/** USD as the line shows it: `$1.23`, `$0.123`, `$0.0123`, `<$0.0001`; `—` unknown. */
export function formatUsd(value: number | null | undefined): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "—";
  const usd = Math.max(0, value);
  if (usd === 0) return "$0.00";
  if (usd < 0.0001) return "<$0.0001";
  const digits = usd >= 1 ? 2 : usd >= 0.1 ? 3 : 4;
  return `$${usd.toFixed(digits)}`;
}

const COST_KINDS = ["input", "cache_read", "cache_write", "output", "subagents"] as const;

/** How much of a turn's usage the server reported: all, some calls, or none. */
export type Reported = "all" | "some" | "none";

export function reportedShare(current: TurnUsage): Reported {
  const calls = current.api_calls ?? 0;
  const unreported = current.unreported_calls ?? 0;
  if (unreported <= 0 || calls <= 0) return "all";
  return unreported >= calls ? "none" : "some";
}

/** A token figure as the compact line shows it: `1.2K`, `?` (unknown), `1.2K+?` (more). */
export function formatReported(value: number, reported: Reported): string {
  if (reported === "none") return "?";
  return reported === "some" ? `${formatTokens(value)}+?` : formatTokens(value);
}

/** The context share as the compact line shows it: `32`, `~32` when estimated. */
export function formatContextShare(context: ContextUsage): string {
  return `${context.estimate ? "~" : ""}${formatPercent(context.percent)}%`;
}

export function createTokenStats(el: HTMLElement, options: ComponentOptions<TokenStatsState> = {}): Component<TokenStatsState> {
  const state: TokenStatsState = { current: null, context: null, running: false, lang: normalizeLang(options.lang) };

  const root = element("div", "neta-root neta-token-stats");
  root.tabIndex = 0;
  const realtime = element("span", "neta-token-realtime");
  const input = element("span", "neta-token-in");
  const output = element("span", "neta-token-out");
  const calls = element("span", "neta-token-calls");
  const cost = element("span", "neta-token-cost");
  realtime.append(input, output, calls, cost);
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

  function place(): void {
    const rect = root.getBoundingClientRect();
    const width = details.offsetWidth;
    const height = details.offsetHeight;
    details.style.left = `${Math.max(4, Math.min(rect.left, window.innerWidth - width - 4))}px`;
    // Below the figures, or above them where the window ends first (the chat's stats sit
    // at the bottom of its input bar, often at the bottom of the page).
    const below = rect.bottom + 6;
    const fitsBelow = below + height <= window.innerHeight - 4 || rect.top - 6 - height < 4;
    details.style.top = `${fitsBelow ? below : rect.top - 6 - height}px`;
  }
  function openDetails(): void {
    document.body.append(details);
    place();
    details.classList.add("neta-is-open");
  }
  function closeDetails(): void {
    details.classList.remove("neta-is-open");
    details.remove();
  }
  // The details are placed once, where the figures are: a scroll that moves the figures
  // (the page's, or an ancestor's) places them again while the pointer or the focus stays
  // on the figures, and closes them otherwise. A scroll that does not move the figures —
  // the chat's conversation following its answer above its input bar — leaves them alone:
  // it closed them under a still pointer, which never entered again to reopen them.
  const onScroll = (event: Event) => {
    if (!details.isConnected) return;
    const target = event.target;
    const moves = !(target instanceof Node) || target.contains(root);
    if (!moves) return;
    if (root.matches(":hover") || document.activeElement === root) place();
    else closeDetails();
  };
  root.addEventListener("mouseenter", openDetails);
  root.addEventListener("focus", openDetails);
  root.addEventListener("mouseleave", closeDetails);
  root.addEventListener("blur", closeDetails);
  window.addEventListener("scroll", onScroll, true);

  function detailRow(label: string, value: string): HTMLDivElement {
    const row = element("div", "neta-token-detail-row");
    row.append(element("span", "neta-token-detail-label", label), element("span", "neta-token-detail-value", value));
    return row;
  }
  function detailNote(text: string): HTMLDivElement {
    return element("div", "neta-token-detail-note", text);
  }

  function render(): void {
    const lang = state.lang;
    root.lang = lang;
    const current = state.current;
    const ctx = state.context ?? { used_tokens: 0, max_tokens: 0, percent: 0 };
    // While a turn runs its figures grow; after it they stay as the last turn's, so what
    // a turn cost can still be read (the line docs/cost.md shows), muted with the rest.
    const showRealtime = current !== null && (state.running || (current.api_calls ?? 0) > 0);
    const reported = current ? reportedShare(current) : "all";
    root.classList.toggle("neta-is-running", state.running);
    realtime.hidden = !showRealtime;
    divider.hidden = !showRealtime;
    if (current) {
      input.textContent = `↑${formatReported(current.input_tokens, reported)}`;
      output.textContent = `↓${formatReported(current.output_tokens, reported)}`;
      const count = current.api_calls ?? 0;
      calls.textContent = `· ${t(lang, count === 1 ? "calls_one" : "calls", { n: count })}`;
      // Absent (an older kernel): no cost slot; null: a call has no known price.
      const priced = current.cost_usd !== undefined;
      cost.hidden = !priced;
      cost.textContent = priced
        ? `· ${formatUsd(current.cost_usd)}${current.session_cost_usd !== undefined && formatUsd(current.session_cost_usd) !== formatUsd(current.cost_usd) ? ` / ${formatUsd(current.session_cost_usd)}` : ""}`
        : "";
      const unknown = priced && (current.cost_usd === null || current.cost_usd === undefined);
      cost.classList.toggle("neta-is-unknown", unknown);
      // A bare dash says nothing: on hover (and to a screen reader) it says the cost is unknown and why.
      cost.title = unknown ? t(lang, "cost_unknown_note") : "";
      if (unknown) cost.setAttribute("aria-label", t(lang, "cost_unknown_note"));
      else cost.removeAttribute("aria-label");
    }
    realtime.classList.toggle("neta-is-unreported", reported !== "all");
    const percent = Number(ctx.percent) || 0;
    contextText.textContent = `${t(lang, "context")} ${formatContextShare(ctx)}`;
    context.classList.toggle("neta-is-estimated", Boolean(ctx.estimate) || Boolean(ctx.window_assumed));
    dot.dataset.level = contextLevel(percent);

    const rows: HTMLDivElement[] = [];
    if (current && showRealtime) {
      const figure = (value: number) =>
        reported === "none"
          ? t(lang, "tokens_unknown")
          : reported === "some"
            ? t(lang, "tokens_at_least", { n: (value ?? 0).toLocaleString("en-US") })
            : (value ?? 0).toLocaleString("en-US");
      rows.push(
        element("div", "neta-token-detail-heading", t(lang, state.running ? "turn_now" : "turn_last")),
        detailRow(t(lang, "input_tokens"), figure(current.input_tokens)),
        detailRow(t(lang, "output_tokens"), figure(current.output_tokens)),
        detailRow(t(lang, "total_tokens"), figure(current.total_tokens)),
        detailRow(t(lang, "api_calls"), String(current.api_calls ?? 0)),
      );
      if (reported !== "all") {
        rows.push(
          detailRow(
            t(lang, "usage_unreported"),
            t(lang, "usage_unreported_value", { n: current.unreported_calls ?? 0, m: current.api_calls ?? 0 }),
          ),
        );
      }
      if (current.cost_usd !== undefined) {
        rows.push(element("div", "neta-token-detail-heading", t(lang, "cost_heading")));
        rows.push(detailRow(t(lang, "cost_turn"), formatUsd(current.cost_usd)));
        for (const kind of COST_KINDS) {
          const part = current.cost_split?.[kind];
          if (!part) continue;
          // A part of the turn's cost: indented under it (CSS; leading spaces collapse).
          const row = detailRow(t(lang, `cost_${kind}`), formatUsd(part));
          row.classList.add("neta-is-part");
          rows.push(row);
        }
        if (current.session_cost_usd !== undefined) rows.push(detailRow(t(lang, "cost_session"), formatUsd(current.session_cost_usd)));
        if (current.cost_usd === null) rows.push(detailNote(t(lang, "cost_unknown_note")));
      }
    }
    const approximately = ctx.estimate ? "~" : "";
    rows.push(
      detailRow(
        t(lang, "context_used"),
        `${approximately}${(ctx.used_tokens ?? 0).toLocaleString("en-US")} / ${(ctx.max_tokens ?? 0).toLocaleString("en-US")} (${formatContextShare(ctx)})`,
      ),
    );
    if (ctx.estimate === "unreported") rows.push(detailNote(t(lang, "context_estimated_unreported")));
    if (ctx.estimate === "compaction") rows.push(detailNote(t(lang, "context_estimated_compaction")));
    if (ctx.window_assumed) rows.push(detailNote(t(lang, "context_window_assumed")));
    details.replaceChildren(...rows);
    root.setAttribute(
      "aria-label",
      rows
        .map((row) =>
          row.classList.contains("neta-token-detail-row")
            ? `${row.children[0]?.textContent}: ${row.children[1]?.textContent}`
            : (row.textContent ?? ""),
        )
        .join("; "),
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
      window.removeEventListener("scroll", onScroll, true);
      closeDetails();
      root.remove();
    },
  };
}
