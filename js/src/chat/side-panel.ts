/**
 * The chat in a side panel, from the view's side: the JupyterLab / Notebook 7 extension
 * (js/labextension/src/side-panel.ts) opens another view of the same widget model in the
 * shell's right area when a view dispatches a `neta-nb-side-panel` event from its element
 * (`{action: "open" | "reveal", model_id, respond(reply), handled}`; `model_id`: the
 * chat's own widget model, which the kernel names — the output holding the view may be a
 * box of several widgets). It marks the page with
 * `data-neta-nb-side-panel` on `<body>` when it offers this; elsewhere (VS Code, Colab,
 * saved widget state) the header offers no side panel.
 */

/** The event the extension answers, and the class of a side panel's node. */
export const SIDE_PANEL_EVENT = "neta-nb-side-panel";
export const SIDE_PANEL_CLASS = "neta-nb-side-panel";

export interface SidePanelAnswer {
  ok: boolean;
  result?: unknown;
  error?: { code: string; message: string };
}

/** Whether the page's extension opens side panels. */
export function sidePanelOffered(): boolean {
  return typeof document !== "undefined" && document.body?.dataset.netaNbSidePanel !== undefined;
}

/** Whether `node` is inside a side panel. */
export function inSidePanel(node: Element): boolean {
  return node.closest(`.${SIDE_PANEL_CLASS}`) !== null;
}

/** Ask the extension to open (or reveal) a side panel showing the widget model `modelId`,
 * for the view holding `from`. */
export function openSidePanel(from: EventTarget, modelId: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const detail = {
      action: "open",
      model_id: modelId,
      handled: false,
      respond: (reply: SidePanelAnswer) =>
        reply?.ok ? resolve() : reject(new Error(reply?.error?.message ?? "the side panel did not open")),
    };
    from.dispatchEvent(new CustomEvent(SIDE_PANEL_EVENT, { detail, bubbles: true, composed: true }));
    if (!detail.handled) reject(new Error("this page has no side panel for the chat"));
  });
}
