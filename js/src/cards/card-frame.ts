/**
 * The frame the tool, skill and sub-agent cards share: the card box, a header that starts
 * with the run's status icon and the card's title, the status written on the card (the
 * modifier `neta-<kind>-card-<status>` each card styles, and `neta-card-is-<status>`, which
 * colours the rule of a ruled card), the card's language, and for a card that folds the
 * chevron that ends its header, the header as its toggle and the collapsed state.
 */
import "./card-frame.css";
import { element, makeToggle, setModifier } from "../dom";
import type { Lang } from "../i18n";
import { createStatusIcon, type RunStatus } from "../status-icon";

export interface CardFrameOptions<Status extends string> {
  kind: "tool" | "skill" | "subagent";
  /** Every status the card can show, for its modifier classes. */
  statuses: readonly Status[];
  /** The title's own class (besides `neta-title`) and the title's element. */
  title: [tag: "span", className: string];
  /** What follows the title in the header, in order. */
  extras: HTMLElement[];
  /** A card that folds: the header toggles it and ends with a chevron. */
  onToggle?: () => void;
  /** A rule down the left side in the status's colour (the skill and sub-agent cards). */
  ruled?: boolean;
}

export interface CardFrame<Status extends string> {
  root: HTMLDivElement;
  header: HTMLDivElement;
  title: HTMLElement;
  /** The card's status, and the icon that shows it. */
  setStatus(status: Status, icon: RunStatus): void;
  setLang(lang: Lang): void;
  /** Open or fold a folding card (its header's `aria-expanded`, the chevron's turn). */
  setOpen(open: boolean): void;
  destroy(): void;
}

export function createCardFrame<Status extends string>(options: CardFrameOptions<Status>): CardFrame<Status> {
  const { kind, statuses } = options;
  const root = element("div", `neta-root neta-card neta-${kind}-card${options.ruled ? " neta-card-ruled" : ""}`);
  const header = element("div", options.onToggle ? `neta-card-header neta-${kind}-header` : `neta-${kind}-header`);
  const icon = createStatusIcon();
  const title = element(options.title[0], `neta-title ${options.title[1]}`);
  header.append(icon.node, title, ...options.extras);
  if (options.onToggle) header.append(element("span", "neta-chevron"));
  root.append(header);
  const removeToggle = options.onToggle ? makeToggle(header, options.onToggle) : () => {};

  return {
    root,
    header,
    title,
    setStatus(status, shown) {
      setModifier(root, `neta-${kind}-card-`, statuses, status);
      if (options.ruled) setModifier(root, "neta-card-is-", statuses, status);
      icon.set(shown);
    },
    setLang(lang) {
      root.lang = lang;
    },
    setOpen(open) {
      header.setAttribute("aria-expanded", String(open));
      root.classList.toggle("neta-is-collapsed", !open);
    },
    destroy() {
      removeToggle();
      root.remove();
    },
  };
}
