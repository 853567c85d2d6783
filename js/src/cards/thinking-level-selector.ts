/**
 * The thinking-level selector (seed 002 §9.2): only the levels the current model supports,
 * labelled per language, disabled while a turn runs. The owner decides which levels exist
 * and what the level falls back to; this component only shows and reports.
 */
import "./thinking-level-selector.css";
import { element, suppressNotebookShortcuts } from "../dom";
import { normalizeLang, t, type Lang, type MessageKey } from "../i18n";
import type { Component, ComponentOptions } from "../types";

export type ThinkLevel = "off" | "minimal" | "low" | "medium" | "high" | "adaptive";

export interface ThinkingLevelSelectorState {
  levels: ThinkLevel[];
  level: ThinkLevel | "";
  disabled: boolean;
  lang: Lang;
}

const LEVEL_LABEL: Record<ThinkLevel, MessageKey> = {
  off: "level_off",
  minimal: "level_minimal",
  low: "level_low",
  medium: "level_medium",
  high: "level_high",
  adaptive: "level_adaptive",
};

export function levelLabel(lang: Lang, level: string): string {
  return level in LEVEL_LABEL ? t(lang, LEVEL_LABEL[level as ThinkLevel]) : level;
}

export function createThinkingLevelSelector(
  el: HTMLElement,
  options: ComponentOptions<ThinkingLevelSelectorState> = {},
): Component<ThinkingLevelSelectorState> {
  const state: ThinkingLevelSelectorState = { levels: [], level: "", disabled: false, lang: normalizeLang(options.lang) };

  const root = element("label", "neta-root neta-level-selector");
  const icon = element("span", "neta-level-icon");
  icon.setAttribute("aria-hidden", "true");
  const select = suppressNotebookShortcuts(element("select", "neta-level-select"));
  root.append(icon, select);
  el.append(root);

  const onChange = () => {
    state.level = select.value as ThinkLevel;
    options.onUserChange?.({ level: state.level });
  };
  select.addEventListener("change", onChange);

  function render(): void {
    const lang = state.lang;
    root.lang = lang;
    root.title = t(lang, "thinking_level");
    select.setAttribute("aria-label", t(lang, "thinking_level"));
    const levels = state.levels.filter((level) => level in LEVEL_LABEL);
    const wanted = levels.map((level) => `${level}:${levelLabel(lang, level)}`).join("|");
    if (select.dataset.options !== wanted) {
      select.replaceChildren(
        ...levels.map((level) => {
          const option = element("option", undefined, levelLabel(lang, level));
          option.value = level;
          return option;
        }),
      );
      if (levels.length === 0) select.append(element("option", undefined, t(lang, "no_thinking")));
      select.dataset.options = wanted;
    }
    if (levels.includes(state.level as ThinkLevel)) select.value = state.level;
    const disabled = state.disabled || levels.length <= 1;
    select.disabled = disabled;
    root.classList.toggle("neta-is-disabled", disabled);
  }

  render();

  return {
    update(patch) {
      if (patch.levels !== undefined) state.levels = Array.isArray(patch.levels) ? patch.levels : [];
      if (patch.level !== undefined) state.level = patch.level;
      if (patch.disabled !== undefined) state.disabled = Boolean(patch.disabled);
      if (patch.lang !== undefined) state.lang = normalizeLang(patch.lang);
      render();
    },
    destroy() {
      select.removeEventListener("change", onChange);
      root.remove();
    },
  };
}
