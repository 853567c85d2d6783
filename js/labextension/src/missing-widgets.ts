/**
 * A notebook saved without widget state (JupyterLab's default) and reopened: the widget
 * manager has no model for a saved widget output and writes "Error displaying widget:
 * model not found" in it. A neta_nb widget's next output is its static form — what it
 * showed when the notebook was saved (neta_nb/widgets/static_form.py) — so there the error
 * output is hidden and the form shows alone. Other widgets' errors stay as they are.
 *
 * The widget manager sets the text and then the class `jupyter-widgets` on the output
 * (and takes both away when it renders again, a kernel having brought the model): the
 * class change is what is watched. The static form may be drawn after the error, so a
 * static form appearing also checks the output before it.
 */
import type { NotebookPanel } from "@jupyterlab/notebook";

/** The text jupyterlab-manager's widget renderer shows when the model is unknown. */
export const MODEL_NOT_FOUND = "Error displaying widget: model not found";
/** Set on the output area child of a hidden error. */
export const HIDDEN_ERROR_CLASS = "neta-nb-missing-widget";
const STATIC_FORM = "neta-static-form";
const OUTPUT = "jp-OutputArea-output";
const CHILD = "jp-OutputArea-child";
const WIDGETS = "jupyter-widgets";
/** Output nodes the widget manager's renderer may have written an error in. */
const WIDGET_OUTPUT = `.${OUTPUT}.${WIDGETS}`;

/** Whether an output node shows the widget manager's "model not found" (its renderer is
 * the output node itself, classed `jupyter-widgets` only when it shows an error). */
export function isModelNotFound(output: Element): boolean {
  return output.classList.contains(OUTPUT) && output.classList.contains(WIDGETS) && output.textContent?.trim() === MODEL_NOT_FOUND;
}

/** Hide or show the output area child holding `output` (a widget view output). */
function check(output: Element): void {
  const child = output.closest(`.${CHILD}`);
  if (!child) return;
  const formNext = child.nextElementSibling?.querySelector(`.${STATIC_FORM}`) != null;
  child.classList.toggle(HIDDEN_ERROR_CLASS, formNext && isModelNotFound(output));
}

function checkBefore(form: Element): void {
  const previous = form.closest(`.${CHILD}`)?.previousElementSibling;
  const output = previous?.querySelector(`:scope > .${OUTPUT}`);
  if (output) check(output);
}

function checkAll(root: Element): void {
  for (const output of root.querySelectorAll(WIDGET_OUTPUT)) check(output);
}

function onMutations(records: MutationRecord[]): void {
  for (const record of records) {
    if (record.type === "attributes") {
      // The class comes and goes with the error: a hidden one that renders now shows.
      const target = record.target as Element;
      if (target.classList?.contains(OUTPUT)) check(target);
      continue;
    }
    for (const node of record.addedNodes) {
      if (!(node instanceof Element)) continue;
      if (node.classList.contains(STATIC_FORM)) checkBefore(node);
      else if (node.classList.contains(CHILD) || node.classList.contains(OUTPUT)) {
        const form = node.querySelector(`.${STATIC_FORM}`);
        if (form) checkBefore(form);
        for (const output of node.querySelectorAll(WIDGET_OUTPUT)) check(output);
        if (node.matches(WIDGET_OUTPUT)) check(node);
      }
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
