/**
 * The shape every component shares. A component is a plain factory,
 * `createX(el, options) -> Component<State>`, that knows nothing of anywidget: the chat view
 * mounts the same components from its own state, the anywidget wrappers bind them to traits.
 */
import type { Lang } from "./i18n";

export interface Component<State> {
  /** Apply a partial state; keys that are absent keep their current value. */
  update(state: Partial<State>): void;
  /** Remove listeners, timers and the component's DOM. */
  destroy(): void;
}

export interface ComponentOptions<State> {
  lang?: Lang;
  /**
   * Called when the user changes a piece of the component's own state (collapse, expand,
   * a selected level). The anywidget binding writes these back to the model's traits.
   */
  onUserChange?: (patch: Partial<State>) => void;
}

export type ComponentFactory<State, C extends Component<State> = Component<State>> = (
  el: HTMLElement,
  options?: ComponentOptions<State>,
) => C;
