/**
 * The model's thinking (seed 002 §7): dashed border, a pulse and a blinking cursor while it
 * streams; open while streaming, folded when done; folded by default for history.
 *
 * Streaming is cheap: `append(delta)` only records text and asks for one render per
 * animation frame; the render turns finished markdown blocks (those before the last blank
 * line outside a code fence) into DOM once and re-renders only the growing tail.
 */
import "./thinking-block.css";
import { createCollapsible, element, makeToggle } from "../dom";
import { normalizeLang, t, type Lang } from "../i18n";
import { StreamingMarkdown } from "../streaming-markdown";
import type { Component, ComponentOptions } from "../types";

export interface ThinkingBlockState {
  text: string;
  streaming: boolean;
  collapsed: boolean;
  lang: Lang;
}

export interface ThinkingBlock extends Component<ThinkingBlockState> {
  /** Append streamed text; rendering happens at most once per animation frame. */
  append(delta: string): void;
  /** The text the block holds now (rendered or about to be). */
  readonly text: string;
}

export function createThinkingBlock(
  el: HTMLElement,
  options: ComponentOptions<ThinkingBlockState> = {},
): ThinkingBlock {
  const state: ThinkingBlockState = { text: "", streaming: false, collapsed: true, lang: normalizeLang(options.lang) };

  const root = element("div", "neta-root neta-thinking-block");
  const header = element("div", "neta-card-header neta-thinking-header");
  const icon = element("span", "neta-thinking-icon");
  icon.setAttribute("aria-hidden", "true");
  const title = element("span", "neta-title neta-thinking-title");
  const chevron = element("span", "neta-chevron");
  header.append(icon, title, chevron);
  const content = new StreamingMarkdown({
    root: "neta-thinking-content neta-markdown",
    stable: "neta-thinking-stable",
    tail: "neta-thinking-tail",
    cursor: "neta-thinking-cursor",
  });
  const body = createCollapsible("", content.root);
  root.append(header, body.root);
  el.append(root);

  // A folded block that never streamed here (history) renders its markdown when first
  // opened: most are never opened, and a long chat holds hundreds of them.
  let contentDue = false;
  const showContent = () => {
    contentDue = state.collapsed && !state.streaming && content.value === "";
    if (!contentDue) content.show(state.text, state.streaming);
  };

  const removeToggle = makeToggle(header, () => {
    state.collapsed = !state.collapsed;
    if (contentDue) showContent();
    renderChrome();
    options.onUserChange?.({ collapsed: state.collapsed });
  });

  function renderChrome(): void {
    const lang = state.lang;
    root.lang = lang;
    root.classList.toggle("neta-is-streaming", state.streaming);
    root.classList.toggle("neta-is-collapsed", state.collapsed);
    root.classList.toggle("neta-is-empty", state.text.length === 0);
    title.textContent = t(lang, state.streaming ? "thinking_streaming" : "thinking");
    header.setAttribute("aria-expanded", String(!state.collapsed));
    body.setOpen(!state.collapsed);
    icon.replaceChildren(state.streaming ? element("span", "neta-spinner") : element("span", "neta-thinking-dots"));
  }

  renderChrome();

  return {
    get text() {
      return state.text;
    },
    append(delta) {
      if (!delta) return;
      state.text += delta;
      root.classList.remove("neta-is-empty");
      content.append(delta);
    },
    update(patch) {
      const wasStreaming = state.streaming;
      if (patch.lang !== undefined) state.lang = normalizeLang(patch.lang);
      if (patch.collapsed !== undefined) state.collapsed = Boolean(patch.collapsed);
      if (patch.streaming !== undefined) state.streaming = Boolean(patch.streaming);
      // Open while streaming, fold when done (the owner may override with `collapsed`).
      if (!wasStreaming && state.streaming && patch.collapsed === undefined) state.collapsed = false;
      if (wasStreaming && !state.streaming && patch.collapsed === undefined) state.collapsed = true;
      if (patch.text !== undefined) state.text = String(patch.text ?? "");
      renderChrome();
      // Streaming, a text that extends what is shown renders as an append; anything
      // else (and the end of streaming) renders whole.
      if (wasStreaming !== state.streaming || state.text !== content.value || (contentDue && !state.collapsed)) {
        showContent();
      }
    },
    destroy() {
      content.destroy();
      removeToggle();
      root.remove();
    },
  };
}
