/**
 * The chat view's header: the agent it talks to, and the ways from the chat to what is
 * around it — the list of chats and the agent's tools (each opens in a drawer over the
 * conversation, ./chat-drawer.ts) and the side panel (./side-panel.ts: another view of
 * this chat beside the notebook, where it stays on screen). A button is there only where it
 * can work: the drawers need a kernel, the side panel the JupyterLab / Notebook 7
 * extension, and a view already in a side panel offers none (its stylesheet hides it).
 * Narrow (a side panel), the buttons keep their icons and drop their words.
 */
import "./chat-header.css";
import { element, svgIcon } from "../dom";
import type { MessageKey } from "../i18n";

export type DrawerName = "sessions" | "tools";

export interface ChatHeaderOptions {
  label: (key: MessageKey) => string;
  /** The list of chats and the tool panel can be opened (a kernel answers). */
  drawers: boolean;
  /** The page opens side panels. */
  sidePanel: boolean;
  onDrawer(name: DrawerName): void;
  onSidePanel(button: HTMLButtonElement): void;
}

export interface ChatHeader {
  root: HTMLElement;
  /** The agent's name and model, and the labels in the view's language. */
  render(agent: { name: string; model: string }): void;
  /** Which drawer is open (its button shows pressed). */
  setOpen(name: DrawerName | null): void;
  destroy(): void;
}

const ICONS: Record<DrawerName | "side", readonly string[]> = {
  sessions: ["M5.5 4h8", "M5.5 8h8", "M5.5 12h8", "M2.5 4h.5", "M2.5 8h.5", "M2.5 12h.5"],
  tools: ["M2.5 4.5h11", "M2.5 11.5h11", "M5.5 3v3", "M10.5 10v3"],
  side: ["M2.5 3.5h11v9h-11z", "M9.5 3.5v9"],
};

const LABELS: Record<DrawerName | "side", { text: MessageKey; hint: MessageKey }> = {
  sessions: { text: "chats", hint: "header_sessions_hint" },
  tools: { text: "panel_title", hint: "header_tools_hint" },
  side: { text: "open_side_panel", hint: "open_side_panel_hint" },
};

export function createChatHeader(options: ChatHeaderOptions): ChatHeader {
  const { label } = options;
  const root = element("div", "neta-chat-header");
  const agent = element("div", "neta-chat-header-agent");
  const agentDot = element("span", "neta-chat-agent-dot");
  const agentName = element("span", "neta-chat-header-name");
  const agentModel = element("span", "neta-chat-header-model");
  agent.append(agentDot, agentName, agentModel);
  const actions = element("div", "neta-chat-header-actions");
  root.append(agent, actions);

  const buttons = new Map<DrawerName | "side", HTMLButtonElement>();
  const makeButton = (name: DrawerName | "side", onClick: (button: HTMLButtonElement) => void) => {
    const button = element("button", `neta-chat-header-button neta-chat-header-${name}`);
    button.type = "button";
    button.append(svgIcon("neta-chat-header-icon", ICONS[name]), element("span", "neta-chat-header-label"));
    button.addEventListener("click", () => onClick(button));
    actions.append(button);
    buttons.set(name, button);
    return button;
  };
  if (options.drawers) {
    for (const name of ["sessions", "tools"] as const) {
      makeButton(name, () => options.onDrawer(name)).setAttribute("aria-expanded", "false");
    }
  }
  if (options.sidePanel) makeButton("side", (button) => options.onSidePanel(button));

  return {
    root,
    render(current) {
      agentName.textContent = current.name;
      agentModel.textContent = current.model;
      agentModel.hidden = !current.model;
      agent.title = current.model ? `${label("agent")}: ${current.name} · ${current.model}` : `${label("agent")}: ${current.name}`;
      for (const [name, button] of buttons) {
        const text = label(LABELS[name].text);
        (button.lastChild as HTMLElement).textContent = text;
        button.title = label(LABELS[name].hint);
        button.setAttribute("aria-label", text);
      }
    },
    setOpen(open) {
      for (const [name, button] of buttons) {
        if (name === "side") continue;
        button.classList.toggle("neta-is-open", name === open);
        button.setAttribute("aria-expanded", String(name === open));
      }
    },
    destroy() {
      root.remove();
    },
  };
}
