/**
 * A `Layout` model that reaches a widget after its view rendered.
 *
 * A neta_nb widget opens no Layout model until `widget.layout` is first used in Python
 * (`NetaWidget.layout` in neta_nb/widgets/base.py: it saves a comm per widget). That first
 * use usually comes after the widget is shown (`card.layout.width = "50%"` in a later cell),
 * and anywidget's views take on only the layout their model held when they were displayed:
 * unlike ipywidgets' own views they do not follow `change:layout`. So every neta_nb view
 * does (the bundle's `render`, src/index.ts): it
 * draws the new layout with the widget manager's own `LayoutView` (the same styling
 * ipywidgets applies), on the view's element, and drops the one it drew before.
 */
import type { AnyModel } from "@anywidget/types";

interface LayoutView {
  remove(): void;
  unlayout?(): void;
}

interface ViewMaker {
  create_view(model: unknown, options: { parent: { el: HTMLElement } }): Promise<LayoutView>;
}

/** Follow `model`'s later `layout` changes on `el`; returns the cleanup. */
export function followLateLayout(model: AnyModel, el: HTMLElement): () => void {
  let drawn: Promise<LayoutView | null> = Promise.resolve(null);
  let stopped = false;
  const manager = model.widget_manager as unknown as Partial<ViewMaker>;
  const onLayout = () => {
    const layout = model.get("layout") as unknown;
    drawn = drawn.then(async (previous) => {
      previous?.unlayout?.();
      previous?.remove();
      if (stopped || !layout || typeof layout !== "object" || !manager.create_view) return null;
      try {
        return await manager.create_view(layout, { parent: { el } });
      } catch (error) {
        console.warn("neta_nb: the widget's layout could not be applied", error);
        return null;
      }
    });
  };
  model.on("change:layout", onLayout);
  return () => {
    stopped = true;
    model.off("change:layout", onLayout);
    void drawn.then((view) => view?.remove());
  };
}
