/**
 * The chat view's input bar (seed 002 §9.2): the prompt box (Enter sends, Shift+Enter is a
 * new line), attached files, `@` mentions (./mention-input.ts: the popup and the chips; a
 * prompt with an unknown one is not sent), the agent selector, the hosts of the
 * thinking-level selector and the token figures, an outside agent's `/` menu and mode
 * selector (./agent-controls.ts), and Send / Stop. A view with no kernel
 * behind it (saved widget state) shows a note in place of the box and no Send.
 */
import { createAgentControls } from "./agent-controls";
import { createAttachmentTray, type AttachmentTray } from "./attachments";
import type { ChatViewState } from "./chat-view-traits";
import { createMentionInput } from "./mention-input";
import { element, suppressNotebookShortcuts } from "../dom";
import type { Lang, MessageKey } from "../i18n";
import type { InlineError } from "../inline-error";

export interface InputActions {
  /** Send a prompt with the files attached to it (possibly none). */
  send(text: string, files: File[]): Promise<unknown>;
  stop(): Promise<unknown>;
  switchAgent(name: string): Promise<unknown>;
  /** An outside agent's session mode chosen (./agent-controls.ts). */
  setMode(mode: string): Promise<unknown>;
}

export interface InputBarOptions {
  saved: boolean;
  /** The view's state (read here, never written). */
  state: ChatViewState;
  actions: Partial<InputActions>;
  lang: () => Lang;
  label: (key: MessageKey, params?: Record<string, string | number>) => string;
  agentName: () => string;
  /** Where files may be dropped (the whole view). */
  dropTarget: HTMLElement;
  /** Where a failed send, stop or switch shows (the view clears it too). */
  error: InlineError;
  /** A prompt went out: the view follows the answer. */
  onSent(): void;
  /** Something the view's chrome shows changed. */
  onChange(): void;
}

export interface InputBar {
  root: HTMLElement;
  levelHost: HTMLElement;
  statsHost: HTMLElement;
  attachments: AttachmentTray;
  /** Labels, the send button's state and the agent choices, from the view's state. */
  render(): void;
  /** A rewound prompt back in the input (when nothing is being typed there). */
  putBack(text: string): void;
  destroy(): void;
}

export function createInputBar(options: InputBarOptions): InputBar {
  const { saved, state, actions, lang, label, agentName, dropTarget, error: inputError, onSent, onChange } = options;
  const root = element("div", "neta-chat-input");
  // Enter sends, Shift+Enter is a new line: the notebook's own Shift+Enter must not fire.
  const textarea = suppressNotebookShortcuts(element("textarea", "neta-chat-textarea"));
  textarea.rows = 2;
  const toolbar = element("div", "neta-chat-toolbar");
  const agentSelect = suppressNotebookShortcuts(element("select", "neta-chat-agent-select"));
  const agentWrap = element("label", "neta-chat-agent");
  agentWrap.append(element("span", "neta-chat-agent-dot"), agentSelect);
  const levelHost = element("div", "neta-chat-level");
  const spacer = element("div", "neta-chat-spacer");
  const statsHost = element("div", "neta-chat-stats");
  const sendButton = element("button", "neta-chat-send");
  sendButton.type = "button";
  const attachments = createAttachmentTray({
    lang,
    dropTarget,
    onRefuse: (message) => (message === null ? inputError.clear() : inputError.show(new Error(message))),
    onChange,
  });
  const mentions = createMentionInput({ textarea, lang, host: root, onChange });
  const agentControls = createAgentControls({ saved, state, textarea, label, error: inputError, setMode: actions.setMode });
  // Seed 002 §9.2: [Agent] [attachments] [thinking level] [agent's mode] … context, send.
  toolbar.append(agentWrap, attachments.button, levelHost, agentControls.modeSelect, spacer, statsHost, sendButton);
  // In place of the textarea where no kernel backs the view.
  const savedNote = element("div", "neta-chat-saved");
  savedNote.setAttribute("role", "status");
  const savedTag = element("span", "neta-tag neta-chat-saved-tag");
  const savedText = element("span", "neta-chat-saved-text");
  savedNote.append(savedTag, savedText);
  savedNote.hidden = !saved;
  textarea.hidden = saved;
  attachments.button.hidden = saved;
  sendButton.hidden = saved;
  root.append(inputError.root, attachments.tray, mentions.chips, savedNote, textarea, toolbar, mentions.popup, agentControls.menu);

  function renderAgents(): void {
    const choices = state.agents.length ? state.agents : [state.agent];
    const wanted = choices.map((choice) => `${choice.name}|${choice.model}`).join("\n");
    if (agentSelect.dataset.options !== wanted) {
      agentSelect.replaceChildren(
        ...choices.map((choice) => {
          const option = element("option", undefined, choice.name);
          option.value = choice.name;
          option.title = choice.model;
          return option;
        }),
      );
      agentSelect.dataset.options = wanted;
    }
    agentSelect.value = state.agent.name;
    // A running turn does not hold the select: switching starts a new chat, and the turn
    // goes on in the background (the session list shows it running).
    agentSelect.disabled = saved || choices.length <= 1;
    agentWrap.title = `${label("agent")}: ${state.agent.name} · ${state.agent.model}`;
  }

  function canSend(): boolean {
    return textarea.value.trim() !== "" || attachments.files().length > 0;
  }

  let checking = false;

  async function send(): Promise<void> {
    if (!canSend() || state.running || !actions.send || checking) return;
    // An unknown mention is named here and nothing goes (the kernel would refuse it too).
    checking = true;
    const refusal = await mentions.check(textarea.value).finally(() => {
      checking = false;
    });
    if (refusal !== null) {
      inputError.show(new Error(refusal));
      return;
    }
    const text = textarea.value.trim();
    const files = attachments.files();
    if (!canSend() || state.running) return;
    const typed = textarea.value;
    textarea.value = "";
    attachments.clear();
    inputError.clear();
    mentions.sent();
    onSent();
    autosize();
    onChange();
    actions.send(text, files).catch((error) => {
      textarea.value = typed; // nothing was sent: give the text and the files back
      attachments.add(files);
      mentions.refresh();
      autosize();
      inputError.show(error);
      onChange();
    });
  }

  function autosize(): void {
    textarea.style.height = "auto";
    textarea.style.height = `${Math.min(textarea.scrollHeight, 160)}px`;
  }

  /** A line break at the caret, as typing it would (undoable, an `input` event). */
  function insertLineBreak(): void {
    // insertText, not insertLineBreak: JupyterLab 4 cancels every `insertLineBreak` input
    // inside a notebook cell (its guard against Shift+Enter typing into an editor while
    // the cell runs), and this box lives in a cell's output.
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- the only undoable insert
    if (!document.execCommand("insertText", false, "\n")) {
      textarea.setRangeText("\n", textarea.selectionStart, textarea.selectionEnd, "end");
      onInput();
    }
  }

  const onKeyDown = (event: KeyboardEvent) => {
    // The popups' arrows, Enter, Tab and Escape.
    if (agentControls.handleKey(event) || mentions.handleKey(event)) return;
    if (event.key !== "Enter" || event.isComposing) return;
    event.preventDefault();
    if (event.shiftKey) insertLineBreak();
    else void send();
  };
  const onInput = () => {
    autosize();
    sendButton.disabled = !state.running && !canSend();
  };
  const onSendClick = () => {
    if (state.running) {
      sendButton.disabled = true;
      inputError.clear();
      void actions.stop?.().catch(inputError.show).finally(onChange);
    } else {
      void send();
    }
  };
  const onAgentChange = () => {
    if (agentSelect.value !== state.agent.name) {
      inputError.clear();
      void actions.switchAgent?.(agentSelect.value).catch((error) => {
        agentSelect.value = state.agent.name;
        inputError.show(error);
      });
    }
  };
  textarea.addEventListener("keydown", onKeyDown);
  textarea.addEventListener("input", onInput);
  sendButton.addEventListener("click", onSendClick);
  agentSelect.addEventListener("change", onAgentChange);
  textarea.addEventListener("keydown", onKeyDown);
  textarea.addEventListener("input", onInput);
  sendButton.addEventListener("click", onSendClick);
  agentSelect.addEventListener("change", onAgentChange);

  return {
    root,
    levelHost,
    statsHost,
    attachments,
    render() {
      savedTag.textContent = label("saved_view");
      savedText.textContent = label("saved_view_hint");
      textarea.placeholder = label("placeholder", { agent: agentName() });
      textarea.setAttribute("aria-label", label("placeholder", { agent: agentName() }));
      sendButton.textContent = label(state.running ? "stop" : "send");
      sendButton.classList.toggle("neta-is-stop", state.running);
      sendButton.disabled = !state.running && !canSend();
      attachments.setDisabled(saved || state.running);
      attachments.render();
      mentions.render();
      agentControls.render();
      renderAgents();
    },
    /** A rewound prompt back in the input, to send again or change (not over text being
     * typed: that is kept). */
    putBack(text: string) {
      if (saved || textarea.value.trim() !== "") return;
      textarea.value = text;
      autosize();
      onChange();
      textarea.focus();
    },
    destroy() {
      textarea.removeEventListener("keydown", onKeyDown);
      textarea.removeEventListener("input", onInput);
      sendButton.removeEventListener("click", onSendClick);
      agentSelect.removeEventListener("change", onAgentChange);
      attachments.destroy();
      mentions.destroy();
      agentControls.destroy();
    },
  };
}
