/**
 * A listbox that completes what is typed in the prompt box, shown above the input bar: the
 * `@` popup (./mention-popup.ts) and an outside agent's `/` menu (./agent-controls.ts).
 * ↑/↓ move, Enter or Tab choose, Escape closes; the mouse chooses too. The prompt box keeps
 * the focus throughout (a combobox: `aria-activedescendant` names the active row, and the
 * rows are chosen on mousedown, before the prompt box could lose the focus or its caret).
 * What a row shows and what choosing does are the caller's.
 */
import "./listbox-popup.css";
import { element } from "../dom";

export interface ListboxPopup<T> {
  root: HTMLElement;
  readonly open: boolean;
  /** Show `items` under the list's accessible `label`; none: the line `empty`. */
  show(items: readonly T[], label: string, empty: string): void;
  hide(): void;
  /** A key pressed in the prompt box: true when it was the popup's (it acted on it). */
  handleKey(event: KeyboardEvent): boolean;
  destroy(): void;
}

export interface ListboxPopupOptions<T> {
  /** The prompt box the popup completes. */
  textarea: HTMLTextAreaElement;
  /** The caller's class names: `<name>` on the box, `<name>-list`, `-option`, `-empty`
   * inside it (beside the shared `neta-listbox…` ones that give the look). */
  name: string;
  /** The root's class (the `<name>-popup` or `-menu` the caller is known by). */
  rootClass: string;
  /** Fill a row (`li`) for `item`. */
  row(item: T, li: HTMLElement): void;
  onChoose(item: T): void;
  /** Escape closed it. */
  onDismiss(): void;
}

let popups = 0;

export function createListboxPopup<T>(options: ListboxPopupOptions<T>): ListboxPopup<T> {
  const { textarea, name } = options;
  popups += 1;
  const id = `neta-listbox-${popups}`;
  const root = element("div", `neta-listbox ${options.rootClass}`);
  const list = element("ul", `neta-listbox-list ${name}-list`);
  list.id = id;
  list.setAttribute("role", "listbox");
  const emptyLine = element("div", `neta-listbox-empty ${name}-empty`);
  root.append(list, emptyLine);
  root.hidden = true;

  let items: readonly T[] = [];
  let active = 0;

  function setActive(index: number): void {
    active = index;
    list.querySelectorAll<HTMLElement>(".neta-listbox-option").forEach((row, position) => {
      const on = position === index;
      row.classList.toggle("neta-is-active", on);
      row.setAttribute("aria-selected", String(on));
      if (on) {
        textarea.setAttribute("aria-activedescendant", row.id);
        row.scrollIntoView({ block: "nearest" });
      }
    });
  }

  function show(found: readonly T[], label: string, empty: string): void {
    items = found;
    list.setAttribute("aria-label", label);
    list.replaceChildren(
      ...found.map((item, index) => {
        const row = element("li", `neta-listbox-option ${name}-option`);
        row.id = `${id}-${index}`;
        row.setAttribute("role", "option");
        options.row(item, row);
        return row;
      }),
    );
    emptyLine.textContent = empty;
    emptyLine.hidden = found.length > 0;
    list.hidden = found.length === 0;
    root.hidden = false;
    // Two popups may complete one prompt box: the one shown names its list.
    textarea.setAttribute("aria-autocomplete", "list");
    textarea.setAttribute("aria-controls", id);
    textarea.setAttribute("aria-expanded", String(found.length > 0));
    if (found.length) setActive(0);
    else textarea.removeAttribute("aria-activedescendant");
  }

  function hide(): void {
    if (root.hidden) return;
    root.hidden = true;
    items = [];
    textarea.setAttribute("aria-expanded", "false");
    textarea.removeAttribute("aria-activedescendant");
  }

  function rowIndex(event: Event): number {
    const row = (event.target as Element | null)?.closest(".neta-listbox-option");
    return row ? [...list.children].indexOf(row) : -1;
  }
  // mousedown, not click: the prompt box must not lose the focus (nor the caret).
  const onMouseDown = (event: MouseEvent) => {
    event.preventDefault();
    const index = rowIndex(event);
    if (index >= 0) options.onChoose(items[index]);
  };
  const onMouseMove = (event: MouseEvent) => {
    const index = rowIndex(event);
    if (index >= 0 && index !== active) setActive(index);
  };
  root.addEventListener("mousedown", onMouseDown);
  root.addEventListener("mousemove", onMouseMove);

  return {
    root,
    get open() {
      return !root.hidden;
    },
    show,
    hide,
    handleKey(event) {
      if (root.hidden || event.isComposing) return false;
      if (event.key === "Escape") {
        event.preventDefault();
        event.stopPropagation();
        hide();
        options.onDismiss();
        return true;
      }
      if (!items.length) return false; // Enter sends, as without the popup
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        event.preventDefault();
        const step = event.key === "ArrowDown" ? 1 : -1;
        setActive((active + step + items.length) % items.length);
        return true;
      }
      if ((event.key === "Enter" || event.key === "Tab") && !event.shiftKey) {
        event.preventDefault();
        options.onChoose(items[active]);
        return true;
      }
      return false;
    },
    destroy() {
      root.removeEventListener("mousedown", onMouseDown);
      root.removeEventListener("mousemove", onMouseMove);
      root.remove();
    },
  };
}
