/**
 * The `_esm` of every neta_nb widget (built to neta_nb/static/loader.js; it imports nothing
 * at run time).
 *
 * The shared code — all components, markdown, the sanitizer and the stylesheet — is the
 * state of one model per kernel (`WidgetBundle` in neta_nb/widgets/bundle.py), which each
 * widget names in its `_bundle` trait (`IPY_MODEL_<id>`). The first widget on a page
 * evaluates that code and adds the stylesheet; every later widget, of any notebook of the
 * page, reuses the module cached on `globalThis` under the bundle's hash. Nothing is fetched
 * from a server, so this works wherever the widget state is: a live kernel, VS Code, Colab,
 * an exported page with saved widget state.
 *
 * From the model's first moment it keeps the numbered batches the model receives
 * (./received-batches.ts): a chat view drawn after its turn started builds from them.
 *
 * It also tells the bundle whether a kernel backs the widgets (`kernel` in the render
 * props): the shared model came with a comm where a kernel opened it, and has none where
 * the widgets are drawn from saved state alone (an nbconvert HTML export, a notebook
 * reopened without its kernel). Views then show what was saved, read-only, and never wait
 * for replies that cannot come.
 */
import type { AnyModel, RenderProps } from "@anywidget/types";
import { inflate, type Packed } from "./inflate";
import { recordReceived } from "./received-batches";
import { announceShownIn } from "./shown-in";

/** anywidget's render props, and whether a kernel backs the widget. */
export type LoadedRenderProps = RenderProps & { kernel: boolean };
type Render = (props: LoadedRenderProps) => unknown;
interface BundleModule {
  default: { render: Render };
}

/** The state of the shared model (Python: `WidgetBundle`). */
interface BundleState {
  code: Packed;
  css: Packed;
  hash: string;
}

interface BundleModel {
  get<K extends keyof BundleState>(key: K): BundleState[K];
  /** `WidgetModel.comm` of @jupyter-widgets/base: set only on a model a kernel opened. */
  comm?: unknown;
}

const REGISTRY = Symbol.for("neta_nb.bundles");
const MODEL_REFERENCE = "IPY_MODEL_";

function registry(): Map<string, Promise<BundleModule>> {
  const global = globalThis as { [REGISTRY]?: Map<string, Promise<BundleModule>> };
  global[REGISTRY] ??= new Map();
  return global[REGISTRY];
}

async function bundleModel(model: AnyModel): Promise<BundleModel> {
  const reference = model.get("_bundle");
  if (typeof reference !== "string" || !reference) {
    throw new Error("this widget names no code bundle (its _bundle trait is empty)");
  }
  const id = reference.startsWith(MODEL_REFERENCE) ? reference.slice(MODEL_REFERENCE.length) : reference;
  return (await model.widget_manager.get_model(id)) as unknown as BundleModel;
}

/** Add a stylesheet to the page once (by its element id). */
function addStyle(id: string, css: string): void {
  if (!css || document.getElementById(id)) return;
  const style = document.createElement("style");
  style.id = id;
  style.textContent = css;
  document.head.append(style);
}

async function evaluate(code: string): Promise<BundleModule> {
  const url = URL.createObjectURL(new Blob([code], { type: "text/javascript" }));
  try {
    return (await import(/* webpackIgnore: true */ /* @vite-ignore */ url)) as BundleModule;
  } finally {
    URL.revokeObjectURL(url);
  }
}

/** The bundle's module, evaluated at most once per page for each hash. */
function load(bundle: BundleModel): Promise<BundleModule> {
  const hash = bundle.get("hash");
  const known = registry().get(hash);
  if (known) return known;
  const loading = (async () => {
    const [code, css] = await Promise.all([inflate(bundle.get("code")), inflate(bundle.get("css"))]);
    addStyle(`neta-nb-styles-${hash}`, css);
    return await evaluate(code);
  })();
  registry().set(hash, loading);
  // A failed evaluation is not cached: the next widget tries again.
  loading.catch(() => registry().delete(hash));
  return loading;
}

/**
 * A neta_nb widget displayed in a cell makes two outputs: its live view, then its static
 * form (neta_nb/widgets/static_form.py), which is what a notebook saved without widget
 * state, GitHub or an offline export shows. Where a view renders, the form after it is not
 * shown; where none does (no kernel and no widget state), nothing hides it. The rule comes
 * with the loader, so it holds from the view's first moment, not once the bundle is in.
 */
const FORM_RULE =
  ".jp-OutputArea-child:has(.neta-view) + .jp-OutputArea-child:has(.neta-static-form){display:none}";

async function render(props: RenderProps): Promise<unknown> {
  addStyle("neta-nb-form-rule", FORM_RULE);
  props.el.classList.add("neta-view");
  try {
    const bundle = await bundleModel(props.model);
    const module = await load(bundle);
    return await module.default.render({ ...props, kernel: bundle.comm !== undefined && bundle.comm !== null });
  } catch (error) {
    // Shown where the user looks, not only in the console.
    const message = document.createElement("div");
    // The view did not render: the static form after this output shows again.
    props.el.classList.remove("neta-view");
    message.className = "neta-load-error";
    const failed = "neta_nb: the widget code did not load";
    message.textContent = `${failed} (${error instanceof Error ? error.message : String(error)})`;
    props.el.append(message);
    console.error(failed, error);
    return () => message.remove();
  }
}

/** Bound to the model as soon as it exists (before any view): keep the numbered batches
 * it receives, for a view drawn mid-turn (./received-batches.ts), and tell the page which
 * cells displayed it (./shown-in.ts). */
function initialize({ model }: { model: AnyModel }): () => void {
  const forgetBatches = recordReceived(model as unknown as Parameters<typeof recordReceived>[0]);
  const forgetCells = announceShownIn(model as unknown as Parameters<typeof announceShownIn>[0]);
  return () => {
    forgetBatches();
    forgetCells();
  };
}

export default { initialize, render };
