/**
 * Binds a plain component to an anywidget model: traits of the same name become the
 * component's state, user changes go back to the traits, and custom messages carry
 * `{kind, id}` requests with replies. This is the only module that knows about anywidget.
 */
import type { AnyModel, RenderProps } from "@anywidget/types";
import { normalizeLang, t, type Lang } from "./i18n";
import type { Component, ComponentOptions } from "./types";

type Model = AnyModel<Record<string, unknown>>;

export type Cleanup = () => void;
/** What a renderer gets: anywidget's model and element, and `kernel: false` where no
 * kernel backs the widget (saved widget state only: see js/src/loader.ts). */
export type RendererProps = Pick<RenderProps, "model" | "el"> & { kernel?: boolean };
export type WidgetRenderer = (props: RendererProps) => Cleanup;

/** Read the named traits into a state object. */
export function readTraits<State>(model: Model, traits: readonly (keyof State & string)[]): Partial<State> {
  const state: Record<string, unknown> = {};
  for (const trait of traits) state[trait] = model.get(trait);
  return state as Partial<State>;
}

/** Mirror a component's user changes into the model. */
export function writeBack<State>(model: Model): (patch: Partial<State>) => void {
  return (patch) => {
    for (const [key, value] of Object.entries(patch)) model.set(key, value);
    model.save_changes();
  };
}

/**
 * Mount `factory` in `el` and keep it in step with `traits`. `extra` may wire more (custom
 * messages); its cleanup runs before the component is destroyed.
 */
export function bindComponent<State, C extends Component<State>>(
  { model, el }: Pick<RenderProps, "model" | "el">,
  factory: (el: HTMLElement, options: ComponentOptions<State>) => C,
  traits: readonly (keyof State & string)[],
  extra?: (component: C, model: Model) => Cleanup,
): Cleanup {
  const typedModel = model as Model;
  const component = factory(el, {
    lang: typedModel.get("lang") as ComponentOptions<State>["lang"],
    onUserChange: writeBack<State>(typedModel),
  });
  component.update(readTraits<State>(typedModel, traits));
  const listeners = traits.map((trait) => {
    const listener = () => component.update({ [trait]: typedModel.get(trait) } as Partial<State>);
    typedModel.on(`change:${trait}`, listener);
    return [trait, listener] as const;
  });
  const extraCleanup = extra?.(component, typedModel);
  return () => {
    for (const [trait, listener] of listeners) typedModel.off(`change:${trait}`, listener);
    extraCleanup?.();
    component.destroy();
  };
}

/** A reply to a request (Python twin: `OkReply` / `ErrorReply` in neta_nb/widgets/base.py). */
export interface Reply<T> {
  kind: "reply";
  id: string;
  ok: boolean;
  result?: T;
  error?: string;
}

/** How long a request waits for its reply unless the call says otherwise. */
export const REQUEST_TIMEOUT_MS = 10_000;

export interface RequestOptions {
  /** Milliseconds to wait for the reply (default `REQUEST_TIMEOUT_MS`). */
  timeout?: number;
  /** Give up earlier (the view went away, the user cancelled). */
  signal?: AbortSignal;
  /** Binary buffers sent with the request (attached files). */
  buffers?: ArrayBuffer[];
}

/**
 * Why a request failed: the kernel's error reply (`reason: "error"`, `message` is the
 * kernel's text), no reply in time, or the kernel went away (restart, shutdown, the widget
 * closed). Views render the last two in their own language with `requestErrorText`.
 */
export class RequestFailure extends Error {
  constructor(
    readonly reason: "error" | "timeout" | "disconnected",
    message: string,
    readonly kind: string,
    readonly timeout = 0,
  ) {
    super(message);
    this.name = "RequestFailure";
  }
}

/**
 * One signal per model that aborts when the kernel side is gone: the widget manager sets
 * `comm_live = false` on every model when the kernel restarts (it fires `comm_live_update`;
 * a model's comm only goes live in its constructor, so any later update is a loss), and a
 * closed widget fires `destroy`. Requests pending then can never be answered: they reject
 * at once instead of waiting for their timeout, and later ones reject immediately.
 */
const connections = new WeakMap<Model, AbortSignal>();

function connectionSignal(model: Model): AbortSignal {
  let signal = connections.get(model);
  if (!signal) {
    const controller = new AbortController();
    const lost = () => {
      model.off("comm_live_update", lost);
      model.off("destroy", lost);
      controller.abort();
    };
    model.on("comm_live_update", lost);
    model.on("destroy", lost);
    signal = controller.signal;
    connections.set(model, signal);
  }
  return signal;
}

let requestCounter = 0;

/**
 * Send `{kind, id, ...payload}` to the kernel and resolve with the matching reply's result.
 * It always settles: it rejects with a `RequestFailure` on an error reply, when no reply
 * came within the timeout, or when the kernel restarted or the widget closed; the reply
 * listener is removed either way. Replies are matched by id; other messages are left alone.
 */
export function request<T>(
  model: Model,
  kind: string,
  payload: Record<string, unknown> = {},
  options: RequestOptions = {},
): Promise<T> {
  requestCounter += 1;
  const id = `${Date.now().toString(36)}-${requestCounter}`;
  const timeout = options.timeout ?? REQUEST_TIMEOUT_MS;
  const disconnected = connectionSignal(model);
  const timer = AbortSignal.timeout(timeout);
  const signal = AbortSignal.any([disconnected, timer, ...(options.signal ? [options.signal] : [])]);
  return new Promise<T>((resolve, reject) => {
    const settle = () => {
      model.off("msg:custom", onMessage);
      signal.removeEventListener("abort", onAbort);
    };
    const onMessage = (message: unknown) => {
      const reply = message as Reply<T>;
      if (reply?.kind !== "reply" || reply.id !== id) return;
      settle();
      if (reply.ok) resolve(reply.result as T);
      else reject(new RequestFailure("error", reply.error ?? `${kind} failed`, kind));
    };
    const onAbort = () => {
      settle();
      if (disconnected.aborted) {
        reject(new RequestFailure("disconnected", `${kind}: the kernel is gone (restarted or shut down)`, kind));
      } else if (timer.aborted) {
        reject(new RequestFailure("timeout", `${kind}: no reply from the kernel within ${timeout / 1000} s`, kind, timeout));
      } else {
        reject(signal.reason instanceof Error ? signal.reason : new RequestFailure("error", `${kind} was cancelled`, kind));
      }
    };
    if (signal.aborted) {
      onAbort();
      return;
    }
    signal.addEventListener("abort", onAbort);
    model.on("msg:custom", onMessage);
    model.send({ ...payload, kind, id }, undefined, options.buffers);
  });
}

/** The text a view shows for a failed request, in `lang`: the kernel's own message for an
 * error reply, a label for a timeout or a lost kernel. */
export function requestErrorText(lang: Lang, error: unknown): string {
  if (error instanceof RequestFailure) {
    if (error.reason === "timeout") return t(lang, "request_timeout", { seconds: Math.round(error.timeout / 1000) });
    if (error.reason === "disconnected") return t(lang, "kernel_disconnected");
    return error.message;
  }
  return error instanceof Error ? error.message : String(error);
}

/** `request` whose failures carry `requestErrorText` as their message, in the model's
 * language at the time: for views that show `error.message` as it is. */
export function requestShowingErrors<T>(
  model: Model,
  kind: string,
  payload: Record<string, unknown> = {},
  options: RequestOptions = {},
): Promise<T> {
  return request<T>(model, kind, payload, options).catch((error: unknown) => {
    throw new Error(requestErrorText(normalizeLang(model.get("lang")), error), { cause: error });
  });
}

/** How long fetching a whole text may take: megabytes, from a kernel on a busy machine. */
export const FULL_TEXT_TIMEOUT_MS = 60_000;

/** The `full_text` reply (Python twin: `FullText` in neta_nb/widgets/chat/wire.py). */
export interface FullText {
  text: string;
}

/**
 * Fetch the whole of a text the state holds a preview of (`full_text`). When the kernel that
 * holds it is gone the failure says so at once: a notebook reopened from saved widget state
 * has models with no kernel behind them (requests would go nowhere), and JupyterLab marks
 * their views `jupyter-widgets-disconnected` — as it does when the kernel restarts.
 */
export function fetchWholeText(model: Model, el: HTMLElement, payload: Record<string, unknown>): Promise<string> {
  const gone = () => new Error(t(normalizeLang(model.get("lang")), "full_text_kernel_gone"));
  if (el.closest(".jupyter-widgets-disconnected")) return Promise.reject(gone());
  return request<FullText>(model, "full_text", payload, { timeout: FULL_TEXT_TIMEOUT_MS }).then(
    (reply) => reply.text,
    (error: unknown) => {
      if (error instanceof RequestFailure && error.reason === "disconnected") throw gone();
      throw new Error(requestErrorText(normalizeLang(model.get("lang")), error), { cause: error });
    },
  );
}
