/**
 * A notebook saved without widget state (JupyterLab's default) and reopened: the widget
 * manager has no model for a saved widget output and writes "Error displaying widget:
 * model not found" in it. Opened with no kernel, it never gets that far: it fails on the
 * kernel it has not and leaves "Loading widget..." there for good (a kernel started later
 * does not change that). A neta_nb widget's next output is its static form — what it
 * showed when the notebook was saved (neta_nb/widgets/static_form.py) — so there either
 * line is hidden and the form shows alone (while a view loads, the form shows in its
 * place; drawn, the view takes it over). Other widgets' lines stay as they are.
 *
 * The widget manager sets the text (and, with the error, the class `jupyter-widgets`) on
 * the output, and takes both away when it draws the view: the class and the output's own
 * children are what is watched. The static form may be drawn after the view's output, so
 * a static form appearing also checks the output before it.
 */
import type { NotebookPanel } from "@jupyterlab/notebook";

/** The text jupyterlab-manager's widget renderer shows when the model is unknown. */
export const MODEL_NOT_FOUND = "Error displaying widget: model not found";
/** The text it shows while it waits for the model (for good where no kernel was). */
export const LOADING = "Loading widget...";
/** Set on the output area child of a hidden error (the model is gone). */
export const HIDDEN_ERROR_CLASS = "neta-nb-missing-widget";
/** Set on the output area child of a hidden waiting line (the view is not drawn yet, or
 * never will be). */
export const WAITING_CLASS = "neta-nb-waiting-widget";
const STATIC_FORM = "neta-static-form";
const OUTPUT = "jp-OutputArea-output";
const CHILD = "jp-OutputArea-child";
const WIDGETS = "jupyter-widgets";
/** The class of a drawn neta_nb view (js/src/loader.ts). */
const VIEW = "neta-view";
/** Output nodes the widget manager's renderer may have written an error in. */
const WIDGET_OUTPUT = `.${OUTPUT}.${WIDGETS}`;

/** Whether an output node shows the widget manager's "model not found" (its renderer is
 * the output node itself, classed `jupyter-widgets` only when it shows an error). */
export function isModelNotFound(output: Element): boolean {
  return output.classList.contains(OUTPUT) && output.classList.contains(WIDGETS) && output.textContent?.trim() === MODEL_NOT_FOUND;
}

/** Whether an output node shows the widget manager's waiting line. */
export function isLoading(output: Element): boolean {
  return output.classList.contains(OUTPUT) && output.textContent?.trim() === LOADING;
}

/** Hide or show the output area child holding `output` (a widget view output). */
function check(output: Element): void {
  const child = output.closest(`.${CHILD}`);
  if (!child) return;
  const formNext = child.nextElementSibling?.querySelector(`.${STATIC_FORM}`) != null;
  child.classList.toggle(HIDDEN_ERROR_CLASS, formNext && isModelNotFound(output));
  child.classList.toggle(WAITING_CLASS, formNext && isLoading(output));
}

function checkBefore(form: Element): void {
  const previous = form.closest(`.${CHILD}`)?.previousElementSibling;
  const output = previous?.querySelector(`:scope > .${OUTPUT}`);
  if (output) check(output);
}

function checkAll(root: Element): void {
  for (const form of root.querySelectorAll(`.${STATIC_FORM}`)) checkBefore(form);
  for (const output of root.querySelectorAll(WIDGET_OUTPUT)) check(output);
}

function onMutations(records: MutationRecord[]): void {
  for (const record of records) {
    const target = record.target as Element;
    // The class comes and goes with the error, the output's children with the waiting
    // line and the view: a hidden output that draws now shows.
    if (target.classList?.contains(OUTPUT)) check(target);
    if (record.type === "attributes") continue;
    // Nothing inside a live view is an output of the notebook (its many changes pass).
    if (target.closest?.(`.${VIEW}`)) continue;
    for (const node of record.addedNodes) {
      if (!(node instanceof Element)) continue;
      if (node.classList.contains(STATIC_FORM)) {
        checkBefore(node);
        continue;
      }
      // An output, an output area or a whole cell drawn with its outputs.
      for (const form of node.querySelectorAll(`.${STATIC_FORM}`)) checkBefore(form);
      for (const output of node.querySelectorAll(WIDGET_OUTPUT)) check(output);
      if (node.matches(WIDGET_OUTPUT)) check(node);
    }
  }
}

/** Watch one notebook's outputs until it closes. */
export function hideMissingWidgetErrors(notebook: NotebookPanel): void {
  const root = notebook.content.node;
  const observer = new MutationObserver(onMutations);
  observer.observe(root, { subtree: true, childList: true, attributes: true, attributeFilter: ["class"] });
  checkAll(root);
  notebook.disposed.connect(() => observer.disconnect());
}
