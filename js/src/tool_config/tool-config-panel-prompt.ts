/**
 * The tool configuration panel's prompt preview: a fold that, while open, shows the system
 * prompt and the tool definitions the agent would be sent. Asked of the kernel when it is
 * opened, and again only when the enabled tools or the language change.
 */
import "./tool-config-panel-prompt.css";
import { element } from "../dom";
import { t, type Lang } from "../i18n";
import type { PreviewResult } from "./tool-config-panel-traits";

/** What the fold needs from the panel. */
export interface PromptPreviewHost {
  /** Send a request; `undefined` when it failed (the panel shows why). */
  send(kind: string): Promise<unknown>;
  /** Add an event listener that the panel removes when it is destroyed. */
  listen<K extends keyof HTMLElementEventMap>(node: HTMLElement, type: K, handler: (event: HTMLElementEventMap[K]) => void): void;
}

export interface PromptPreview {
  readonly node: HTMLDetailsElement;
  /** Draw in `lang`; while open, ask again if `enabledTools` changed. */
  render(lang: Lang, enabledTools: readonly string[]): void;
  /** Drop an answer still on its way. */
  destroy(): void;
}

export function createPromptPreview(host: PromptPreviewHost): PromptPreview {
  const node = element("details", "neta-tc-preview");
  const summary = element("summary", "neta-tc-preview-summary");
  const title = element("span", "neta-tc-preview-title");
  const hint = element("span", "neta-tc-preview-hint");
  summary.append(title, hint);
  const body = element("div", "neta-tc-preview-body");
  node.append(summary, body);

  let lang: Lang = "en";
  let enabled: readonly string[] = [];
  let seq = 0;
  let loadedFor = "";

  function load(): void {
    const key = JSON.stringify([enabled, lang]);
    if (!node.open || key === loadedFor) return;
    loadedFor = key;
    seq += 1;
    const asked = seq;
    if (!body.hasChildNodes()) body.append(element("div", "neta-tc-empty-line", t(lang, "panel_preview_loading")));
    void host.send("preview").then((result) => {
      if (asked !== seq || !result) return;
      const { system_prompt: systemPrompt, tools } = result as PreviewResult;
      const parts: HTMLElement[] = [];
      if (systemPrompt) {
        parts.push(element("div", "neta-tc-preview-label", t(lang, "panel_system_prompt")));
        parts.push(element("pre", "neta-tc-code", systemPrompt));
      }
      parts.push(element("div", "neta-tc-preview-label", t(lang, "panel_tool_definitions", { n: tools.length })));
      parts.push(element("pre", "neta-tc-code", JSON.stringify(tools, null, 2)));
      body.replaceChildren(...parts);
    });
  }
  host.listen(node, "toggle", () => load());

  return {
    node,
    render(nextLang, enabledTools) {
      lang = nextLang;
      enabled = enabledTools;
      title.textContent = t(lang, "panel_preview");
      hint.textContent = t(lang, "panel_preview_hint");
      load();
    },
    destroy() {
      seq += 1;
    },
  };
}
