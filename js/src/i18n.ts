/**
 * Labels in English and Chinese (zh-CN, the product specs' wording), from the one table
 * every part of neta_nb reads: `neta_nb/labels.json`. Python renders its text fallbacks and
 * the resolver's reasons from the same file (`neta_nb/labels.py`), so a word changed there
 * changes everywhere; esbuild inlines the JSON into the bundle.
 */
import TABLE from "../../neta_nb/labels.json";

export type Lang = "en" | "zh-CN";

export type MessageKey = keyof (typeof TABLE)["en"];

// Typed as complete in both languages: a key missing from zh-CN fails the type check.
const LABELS: Record<Lang, Record<MessageKey, string>> = TABLE;

export function normalizeLang(value: unknown): Lang {
  return typeof value === "string" && value.toLowerCase().startsWith("zh") ? "zh-CN" : "en";
}

/** Whether `key` is in the table (for keys built from data, such as a category name). */
export function hasLabel(key: string): key is MessageKey {
  return Object.hasOwn(LABELS.en, key);
}

/** The label for `key` in `lang`, with `{name}` placeholders filled from `params`. */
export function t(lang: Lang, key: MessageKey, params: Record<string, string | number> = {}): string {
  const template: string = LABELS[lang][key] ?? LABELS.en[key];
  return template.replace(/\{(\w+)\}/g, (_, name: string) => String(params[name] ?? ""));
}
