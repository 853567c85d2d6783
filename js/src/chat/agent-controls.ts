/**
 * What an outside agent offers beside the prompt box (Python: widgets/chat/requests/agent_controls.py):
 *
 * - the `/` menu: typing `/` at the start of the prompt lists the agent's commands (name,
 *   description), filtered as more is typed (./slash-commands.ts); ↑/↓ move, Enter or Tab
 *   choose, Escape closes, the mouse chooses too. The chosen command is written as
 *   `/name ` and goes to the agent as the prompt's text. The prompt box keeps the focus
 *   (a combobox, as the `@` popup: ./mention-popup.ts, whose look it has).
 * - the mode selector: the agent's session modes, showing the one it is in; a choice asks
 *   the agent (`set_mode`). The protocol lets a client change the mode while a prompt runs,
 *   so a running turn does not disable it. A refusal shows as the input bar's error and the
 *   selector goes back to the agent's mode.
 *
 * Neither shows for a native agent or an outside agent that offered none.
 */
import "./agent-controls.css";
import type { ChatViewState } from "./chat-view-traits";
import { filterCommands, slashAtCaret, withCommand, type AgentCommand } from "./slash-commands";
import { element, suppressNotebookShortcuts } from "../dom";
import type { MessageKey } from "../i18n";
import type { InlineError } from "../inline-error";

/** `set_mode`: the session mode chosen (Python twin: `SetModeRequest`). */
export interface SetModeRequest {
  mode: string;
}

/** The `set_mode` reply: the request was taken; the agent's answer comes as the
 * `agent_mode` or `mode_error` trait (Python twin: `SetModeReply`). */
export interface SetModeReply {
  mode: string;
}

export interface AgentControlsOptions {
  saved: boolean;
  state: ChatViewState;
  textarea: HTMLTextAreaElement;
  label: (key: MessageKey, params?: Record<string, string | number>) => string;
  error: InlineError;
  setMode?: (mode: string) => Promise<unknown>;
}

export interface AgentControls {
  /** The `/` menu (placed above the input bar). */
  menu: HTMLElement;
  /** The mode selector (in the toolbar). */
  modeSelect: HTMLElement;
  /** A key pressed in the prompt box: true when it was the menu's (it acted on it). */
  handleKey(event: KeyboardEvent): boolean;
  render(): void;
  destroy(): void;
}

let menus = 0;

export function createAgentControls(options: AgentControlsOptions): AgentControls {
  const { saved, state, textarea, label, error } = options;
  menus += 1;
  const id = `neta-slash-menu-${menus}`;
  const menu = element("div", "neta-slash-menu");
  const list = element("ul", "neta-slash-list");
  list.id = id;
  list.setAttribute("role", "listbox");
  const empty = element("div", "neta-slash-empty");
  menu.append(list, empty);
  menu.hidden = true;

  const modeWrap = element("label", "neta-chat-mode");
  const modeSelect = suppressNotebookShortcuts(element("select", "neta-chat-mode-select"));
  modeWrap.append(modeSelect);
  modeWrap.hidden = true;

  let shown: AgentCommand[] = [];
  let active = 0;
  let dismissed = false; // Escape: closed until the prompt no longer starts with a command
  let errorShown = "";
  // The mode chosen here until the agent's answer (its mode, or a refusal) arrives: what
  // the selector shows meanwhile, so a redraw does not flick it back.
  let pending: { mode: string; from: string } | null = null;

  // --- the `/` menu -------------------------------------------------------------------------
  function typed(): string | null {
    if (saved || state.agent_commands.length === 0 || document.activeElement !== textarea) return null;
    if (textarea.selectionStart !== textarea.selectionEnd) return null;
    return slashAtCaret(textarea.value, textarea.selectionStart);
  }

  function setActive(index: number): void {
    active = index;
    list.querySelectorAll<HTMLElement>(".neta-slash-option").forEach((row, position) => {
      const on = position === index;
      row.classList.toggle("neta-is-active", on);
      row.setAttribute("aria-selected", String(on));
      if (on) {
        textarea.setAttribute("aria-activedescendant", row.id);
        row.scrollIntoView({ block: "nearest" });
      }
    });
  }

  function hide(): void {
    if (menu.hidden) return;
    menu.hidden = true;
    shown = [];
    textarea.removeAttribute("aria-activedescendant");
    textarea.setAttribute("aria-expanded", "false");
  }

  function update(): void {
    const prefix = typed();
    if (prefix === null) dismissed = false;
    if (prefix === null || dismissed) {
      hide();
      return;
    }
    shown = filterCommands(state.agent_commands, prefix);
    list.setAttribute("aria-label", label("slash_menu"));
    list.replaceChildren(
      ...shown.map((command, index) => {
        const row = element("li", "neta-slash-option");
        row.id = `${id}-${index}`;
        row.setAttribute("role", "option");
        row.dataset.command = command.name;
        row.append(element("span", "neta-slash-key", `/${command.name}`), element("span", "neta-slash-detail", command.description));
        row.title = command.description;
        return row;
      }),
    );
    empty.textContent = label("slash_none", { prefix });
    empty.hidden = shown.length > 0;
    list.hidden = shown.length === 0;
    menu.hidden = false;
    textarea.setAttribute("aria-controls", id);
    textarea.setAttribute("aria-expanded", String(shown.length > 0));
    if (shown.length) setActive(0);
    else textarea.removeAttribute("aria-activedescendant");
  }

  function choose(command: AgentCommand): void {
    const next = withCommand(textarea.value, textarea.selectionStart, command);
    textarea.focus();
    textarea.select();
    // insertText keeps the edit undoable; the value directly where it is not supported.
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the only undoable insert
    if (!document.execCommand("insertText", false, next.text)) {
      textarea.value = next.text;
    }
    textarea.setSelectionRange(next.caret, next.caret);
    textarea.dispatchEvent(new Event("input", { bubbles: true }));
    dismissed = true; // chosen: the menu stays closed while this command is the prompt's
    hide();
  }

  function rowIndex(event: Event): number {
    const row = (event.target as Element | null)?.closest(".neta-slash-option");
    return row ? [...list.children].indexOf(row) : -1;
  }
  // mousedown, not click: the prompt box keeps the focus (and the caret).
  const onMouseDown = (event: MouseEvent) => {
    event.preventDefault();
    const index = rowIndex(event);
    if (index >= 0) choose(shown[index]);
  };
  const onMouseMove = (event: MouseEvent) => {
    const index = rowIndex(event);
    if (index >= 0 && index !== active) setActive(index);
  };
  const onCaret = (event: Event) => {
    if (event instanceof KeyboardEvent && !menu.hidden && ["ArrowUp", "ArrowDown"].includes(event.key)) return;
    update();
  };
  const onBlur = () => hide();
  menu.addEventListener("mousedown", onMouseDown);
  menu.addEventListener("mousemove", onMouseMove);
  textarea.addEventListener("input", update);
  textarea.addEventListener("keyup", onCaret);
  textarea.addEventListener("click", onCaret);
  textarea.addEventListener("focus", update);
  textarea.addEventListener("blur", onBlur);

  function handleKey(event: KeyboardEvent): boolean {
    if (menu.hidden || event.isComposing) return false;
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      dismissed = true;
      hide();
      return true;
    }
    if (!shown.length) return false; // Enter sends, as without the menu
    if (event.key === "ArrowDown" || event.key === "ArrowUp") {
      event.preventDefault();
      const step = event.key === "ArrowDown" ? 1 : -1;
      setActive((active + step + shown.length) % shown.length);
      return true;
    }
    if ((event.key === "Enter" || event.key === "Tab") && !event.shiftKey) {
      event.preventDefault();
      choose(shown[active]);
      return true;
    }
    return false;
  }

  // --- the mode selector --------------------------------------------------------------------
  function renderModes(): void {
    const modes = state.agent_modes;
    const wanted = modes.map((mode) => `${mode.id}|${mode.name}|${mode.description}`).join("\n");
    if (modeSelect.dataset.options !== wanted) {
      modeSelect.replaceChildren(
        ...modes.map((mode) => {
          const option = element("option", undefined, mode.name || mode.id);
          option.value = mode.id;
          option.title = mode.description;
          return option;
        }),
      );
      modeSelect.dataset.options = wanted;
    }
    if (state.mode_error !== errorShown) {
      errorShown = state.mode_error;
      if (errorShown) {
        pending = null; // refused: back to the agent's mode
        error.show(new Error(errorShown));
      }
    }
    if (pending !== null && state.agent_mode !== pending.from) pending = null;
    modeSelect.value = pending?.mode ?? state.agent_mode;
    modeWrap.hidden = modes.length === 0 || state.read_only !== null;
    modeSelect.disabled = saved || !options.setMode;
    const current = modes.find((mode) => mode.id === state.agent_mode);
    modeWrap.title = `${label("agent_mode")}: ${current?.name ?? state.agent_mode}${current?.description ? ` · ${current.description}` : ""}`;
    modeSelect.setAttribute("aria-label", label("agent_mode"));
  }

  const onModeChange = () => {
    const mode = modeSelect.value;
    if (mode === state.agent_mode || !options.setMode) return;
    error.clear();
    pending = { mode, from: state.agent_mode };
    void options.setMode(mode).catch((failure) => {
      pending = null;
      modeSelect.value = state.agent_mode;
      error.show(failure);
    });
  };
  modeSelect.addEventListener("change", onModeChange);

  return {
    menu,
    modeSelect: modeWrap,
    handleKey,
    render() {
      renderModes();
    },
    destroy() {
      menu.removeEventListener("mousedown", onMouseDown);
      menu.removeEventListener("mousemove", onMouseMove);
      textarea.removeEventListener("input", update);
      textarea.removeEventListener("keyup", onCaret);
      textarea.removeEventListener("click", onCaret);
      textarea.removeEventListener("focus", update);
      textarea.removeEventListener("blur", onBlur);
      modeSelect.removeEventListener("change", onModeChange);
      menu.remove();
    },
  };
}
