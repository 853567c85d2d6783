/**
 * Another widget of the same kernel drawn inside a view: the chat's drawer shows the list
 * of chats or the tool panel the kernel made for it (`open_panel`, neta_nb/widgets/chat/
 * panels/header_panels.py) with the page's widget manager, as a cell's output would show it.
 */
import type { AnyModel } from "@anywidget/types";
import type { Cleanup } from "../anywidget-binding";

interface WidgetView {
  el: HTMLElement;
  remove(): void;
}

interface WidgetViewMaker {
  get_model(modelId: string): Promise<unknown>;
  create_view(model: unknown, options?: object): Promise<WidgetView>;
}

/** Draw the widget `modelId` in `host`; resolves with what removes its view. */
export async function drawWidget(model: AnyModel, modelId: string, host: HTMLElement, signal: AbortSignal): Promise<Cleanup> {
  const manager = model.widget_manager as unknown as Partial<WidgetViewMaker>;
  if (typeof manager.get_model !== "function" || typeof manager.create_view !== "function") {
    throw new Error("this page cannot draw another widget here");
  }
  const child = await manager.get_model(modelId);
  const view = await manager.create_view(child, {});
  if (signal.aborted) {
    view.remove();
    return () => undefined;
  }
  host.append(view.el);
  return () => view.remove();
}
