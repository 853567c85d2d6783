/**
 * Binds a plain component to an anywidget model: traits of the same name become the
 * component's state, user changes go back to the traits, and custom messages carry
 * `{kind, id}` requests with replies. This is the only module that knows about anywidget.
 */
import type { AnyModel, RenderProps } from "@anywidget/types";
import type { Component, ComponentOptions } from "./types";

type Model = AnyModel<Record<string, unknown>>;

export type Cleanup = () => void;
export type WidgetRenderer = (props: Pick<RenderProps, "model" | "el">) => Cleanup;

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

export interface Reply<T> {
  kind: "reply";
  id: string;
  ok: boolean;
  result?: T;
  error?: string;
}

let requestCounter = 0;

/**
 * Send `{kind, id, ...payload}` to the kernel and resolve with the matching reply's result
 * (or reject with its error). Replies are matched by id; other messages are left alone.
 */
export function request<T>(model: Model, kind: string, payload: Record<string, unknown> = {}): Promise<T> {
  const id = `${Date.now().toString(36)}-${(requestCounter += 1)}`;
  return new Promise<T>((resolve, reject) => {
    const onMessage = (message: unknown) => {
      const reply = message as Reply<T>;
      if (!reply || reply.kind !== "reply" || reply.id !== id) return;
      model.off("msg:custom", onMessage);
      if (reply.ok) resolve(reply.result as T);
      else reject(new Error(reply.error ?? `${kind} failed`));
    };
    model.on("msg:custom", onMessage);
    model.send({ ...payload, kind, id });
  });
}
