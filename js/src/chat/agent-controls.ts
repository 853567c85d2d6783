/**
 * What an outside agent offers beside the prompt box (Python: widgets/chat/requests/agent_controls.py):
 *
 * - the `/` menu: typing `/` at the start of the prompt lists the agent's commands (name,
 *   description), filtered as more is typed (./slash-commands.ts); ↑/↓ move, Enter or Tab
 *   choose, Escape closes, the mouse chooses too (the prompt box's listbox,
 *   ./listbox-popup.ts, as the `@` popup's). The chosen command is written as `/name ` and
 *   goes to the agent as the prompt's text.
 * - the mode selector: the agent's session modes, showing the one it is in; a choice asks
 *   the agent (`set_mode`). The protocol lets a client change the mode while a prompt runs,
 *   so a running turn does not disable it. A refusal shows as the input bar's error and the
 *   selector goes back to the agent's mode.
 *
 * Neither shows for a native agent or an outside agent that offered none.
 */
import "./agent-controls.css";
import type { ChatViewState } from "./chat-view-traits";
import { createListboxPopup } from "./listbox-popup";
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

export function createAgentControls(options: AgentControlsOptions): AgentControls {
  const { saved, state, textarea, label, error } = options;
  const modeWrap = element("label", "neta-chat-mode");
  const modeSelect = suppressNotebookShortcuts(element("select", "neta-chat-mode-select"));
  modeWrap.append(modeSelect);
  modeWrap.hidden = true;

  let dismissed = false; // Escape: closed until the prompt no longer starts with a command
  let errorShown = "";
  // The mode chosen here until the agent's answer (its mode, or a refusal) arrives: what
  // the selector shows meanwhile, so a redraw does not flick it back.
  let pending: { mode: string; from: string } | null = null;

  // --- the `/` menu -------------------------------------------------------------------------
  const listbox = createListboxPopup<AgentCommand>({
    textarea,
    name: "neta-slash",
    rootClass: "neta-slash-menu",
    row(command, row) {
      row.dataset.command = command.name;
      row.title = command.description;
      row.append(element("span", "neta-listbox-key neta-slash-key", `/${command.name}`), element("span", "neta-listbox-detail neta-slash-detail", command.description));
    },
    onChoose: choose,
    onDismiss: () => {
      dismissed = true;
    },
  });
  const menu = listbox.root;

  function typed(): string | null {
    if (saved || state.agent_commands.length === 0 || document.activeElement !== textarea) return null;
    if (textarea.selectionStart !== textarea.selectionEnd) return null;
    return slashAtCaret(textarea.value, textarea.selectionStart);
  }

  function update(): void {
    const prefix = typed();
    if (prefix === null) dismissed = false;
    if (prefix === null || dismissed) {
      listbox.hide();
      return;
    }
    listbox.show(filterCommands(state.agent_commands, prefix), label("slash_menu"), label("slash_none", { prefix }));
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
    listbox.hide();
  }

  const onCaret = (event: Event) => {
    if (event instanceof KeyboardEvent && listbox.open && ["ArrowUp", "ArrowDown"].includes(event.key)) return;
    update();
  };
  const onBlur = () => listbox.hide();
  textarea.addEventListener("input", update);
  textarea.addEventListener("keyup", onCaret);
  textarea.addEventListener("click", onCaret);
  textarea.addEventListener("focus", update);
  textarea.addEventListener("blur", onBlur);

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
    handleKey: listbox.handleKey,
    render() {
      renderModes();
    },
    destroy() {
      textarea.removeEventListener("input", update);
      textarea.removeEventListener("keyup", onCaret);
      textarea.removeEventListener("click", onCaret);
      textarea.removeEventListener("focus", update);
      textarea.removeEventListener("blur", onBlur);
      modeSelect.removeEventListener("change", onModeChange);
      listbox.destroy();
    },
  };
}
