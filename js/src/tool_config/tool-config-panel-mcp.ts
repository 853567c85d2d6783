/**
 * What the tool configuration panel shows of an MCP server on its category's section: the
 * server's status (connected / failed with the reason / reconnecting), the server tool
 * names it refused, and every tool whose description changed after it was granted (a
 * "rug pull"), with the old and new text and a button to accept the change.
 *
 * Everything here comes from an untrusted server, so it is set with textContent only.
 */
import "./tool-config-panel-mcp.css";
import { element } from "../dom";
import { t, type Lang } from "../i18n";
import type { MCPServerInfo } from "./tool-config-panel-traits";

export class McpServerSection {
  /** Goes between the category header and its tools. */
  readonly node: HTMLElement;
  private readonly status: HTMLElement;
  private readonly refused: HTMLElement;
  private readonly changes: HTMLElement;

  /** `onAcknowledge` gets the description shown: the kernel refuses it if the tool changed again since. */
  constructor(private readonly onAcknowledge: (name: string, description: string) => void) {
    this.node = element("div", "neta-tc-mcp");
    this.status = element("div", "neta-tc-mcp-status");
    this.refused = element("div", "neta-tc-mcp-refused");
    this.changes = element("div", "neta-tc-mcp-changes");
    this.node.append(this.status, this.refused, this.changes);
    this.node.hidden = true;
  }

  paint(server: MCPServerInfo | undefined, lang: Lang): void {
    this.node.hidden = server === undefined;
    if (server === undefined) return;
    this.node.dataset.server = server.name;
    this.status.dataset.status = server.status;
    this.status.replaceChildren(element("span", "neta-tc-mcp-dot"), element("span", "neta-tc-mcp-status-text", server.status_text));
    const refusedNames = Object.keys(server.refused ?? {});
    this.refused.hidden = refusedNames.length === 0;
    this.refused.textContent = refusedNames.length ? t(lang, "panel_mcp_refused", { names: refusedNames.join(", ") }) : "";
    this.refused.title = refusedNames.map((name) => `${name}: ${server.refused[name]}`).join("\n");
    this.changes.replaceChildren(
      ...(server.changed ?? []).map((change) => {
        const notice = element("div", "neta-tc-notice neta-tc-mcp-change");
        notice.dataset.tool = change.name;
        notice.setAttribute("role", "alert");
        notice.append(element("div", "neta-tc-notice-title", t(lang, "panel_mcp_changed", { name: change.name })));
        if (change.schema_changed) notice.append(element("div", "neta-tc-mcp-schema", t(lang, "panel_mcp_changed_schema")));
        for (const [key, text] of [
          ["panel_mcp_before", change.old_description],
          ["panel_mcp_now", change.new_description],
        ] as const) {
          const line = element("div", "neta-tc-mcp-description");
          line.append(element("span", "neta-tc-mcp-description-label", t(lang, key)), element("span", "neta-tc-mcp-description-text", text));
          notice.append(line);
        }
        const button = element("button", "neta-tc-link-button neta-tc-mcp-acknowledge", t(lang, "panel_mcp_acknowledge"));
        button.type = "button";
        button.addEventListener("click", () => this.onAcknowledge(change.name, change.new_description));
        notice.append(button);
        return notice;
      }),
    );
  }
}
