/**
 * The tool configuration panel's "preview as" control: a model (capabilities) and a scene
 * to show the tools as, the error of a refused preview beside the selects (where the user
 * acted), and — while a preview is active — a notice that cannot be missed, with a reset.
 * The kernel re-resolves; the agent's config never changes.
 */
import "./tool-config-panel-preview.css";
import { element, suppressNotebookShortcuts } from "../dom";
import { t, type Lang } from "../i18n";
import type { PreviewAs, PreviewAsRequest, PreviewChoice, PreviewOptions } from "./tool-config-panel-traits";

/** What the control needs from the panel. */
export interface PreviewAsHost {
  /** Send a request; failures go to `showFailure` (null clears it). */
  send(kind: string, payload: Record<string, unknown>, showFailure: (message: string | null) => void): Promise<unknown>;
  /** Add an event listener that the panel removes when it is destroyed. */
  listen<K extends keyof HTMLElementEventMap>(node: HTMLElement, type: K, handler: (event: HTMLElementEventMap[K]) => void): void;
  /** Draw the panel again from its state. */
  rerender(): void;
  lang(): Lang;
}

export interface PreviewAsControl {
  /** The selects (and the error of a refused preview). */
  readonly bar: HTMLDivElement;
  /** "Previewing as …" with a reset, shown while a preview is active. */
  readonly notice: HTMLDivElement;
  /** Draw from the kernel's state; returns the tools the active preview changes. */
  render(lang: Lang, options: Partial<PreviewOptions>, active: PreviewAs | null): Set<string>;
}

export function createPreviewAsControl(host: PreviewAsHost): PreviewAsControl {
  const { send, listen, rerender } = host;
  const currentLang = host.lang;
  let options: Partial<PreviewOptions> = {};

  const previewAs = element("div", "neta-tc-preview-as");
  const previewAsTitle = element("span", "neta-tc-preview-as-title");
  const capabilitySelect = suppressNotebookShortcuts(element("select", "neta-tc-select"));
  capabilitySelect.dataset.preview = "capabilities";
  const capabilityLabel = element("label", "neta-tc-select-field");
  const capabilityText = element("span", "neta-tc-select-label");
  capabilityLabel.append(capabilityText, capabilitySelect);
  const sceneSelect = suppressNotebookShortcuts(element("select", "neta-tc-select"));
  sceneSelect.dataset.preview = "scene";
  const sceneLabel = element("label", "neta-tc-select-field");
  const sceneText = element("span", "neta-tc-select-label");
  sceneLabel.append(sceneText, sceneSelect);
  const previewAsError = element("span", "neta-tc-preview-as-error");
  previewAsError.setAttribute("role", "alert");
  previewAsError.hidden = true;
  previewAs.append(previewAsTitle, capabilityLabel, sceneLabel, previewAsError);

  const previewing = element("div", "neta-tc-previewing");
  previewing.setAttribute("role", "status");
  const previewingIcon = element("span", "neta-tc-previewing-icon");
  previewingIcon.setAttribute("aria-hidden", "true");
  const previewingWords = element("div", "neta-tc-previewing-words");
  const previewingText = element("div", "neta-tc-previewing-text");
  const previewingNote = element("div", "neta-tc-previewing-note");
  previewingWords.append(previewingText, previewingNote);
  const previewingReset = element("button", "neta-tc-previewing-reset");
  previewingReset.type = "button";
  previewing.append(previewingIcon, previewingWords, previewingReset);
  previewing.hidden = true;

  function showPreviewError(message: string | null): void {
    previewAsError.hidden = message === null;
    previewAsError.textContent = message === null ? "" : t(currentLang(), "panel_request_failed", { error: message });
  }
  function choices(): PreviewChoice[] {
    return Array.isArray(options.choices) ? options.choices : [];
  }
  function requestPreview(): void {
    const choice = choices()[Number(capabilitySelect.value)];
    const scene = sceneSelect.value === "" ? null : sceneSelect.value.slice(1);
    if (!choice) return;
    capabilitySelect.disabled = sceneSelect.disabled = true;
    void send("preview_as", { capabilities: choice.capabilities, scene } satisfies PreviewAsRequest, showPreviewError).finally(() => {
      capabilitySelect.disabled = sceneSelect.disabled = false;
      // A refused preview leaves the selects showing what is really previewed.
      rerender();
    });
  }
  listen(capabilitySelect, "change", requestPreview);
  listen(sceneSelect, "change", requestPreview);
  listen(previewingReset, "click", () => {
    previewingReset.disabled = true;
    void send("reset_preview", {}, showPreviewError).finally(() => {
      previewingReset.disabled = false;
    });
  });

  function option(value: string, label: string, selected: boolean): HTMLOptionElement {
    const node = element("option", undefined, label);
    node.value = value;
    node.selected = selected;
    return node;
  }

  function render(lang: Lang, previewOptions: Partial<PreviewOptions>, active: PreviewAs | null): Set<string> {
    options = previewOptions;
    const list = choices();
    const agentScene = options.agent_scene ?? null;
    const scenes = Array.isArray(options.scenes) ? options.scenes : [];
    const sceneLabels = options.scene_labels ?? {};
    previewAsTitle.textContent = t(lang, "panel_preview_as");
    previewAs.title = t(lang, "panel_preview_as_hint");
    capabilityText.textContent = t(lang, "panel_preview_capabilities");
    sceneText.textContent = t(lang, "panel_preview_scene_label");
    // Built from the kernel's choices on every render: a handful of options, and the
    // selection must follow the kernel (a preview set from Python, a refused one).
    const picked = active ? list.findIndex((choice) => choice.id === active.choice) : 0;
    const capabilityOptions = list.map((choice, index) => option(String(index), choice.label, index === picked));
    if (active && picked < 0) {
      capabilityOptions.push(option("custom", t(lang, "panel_preview_model_custom", { capabilities: (active.capabilities ?? []).join(", ") }), true));
    }
    capabilitySelect.replaceChildren(...capabilityOptions);
    // Scene values carry a prefix so that no scene name can collide with "no scene" ("").
    const scene = active ? active.scene : agentScene;
    sceneSelect.replaceChildren(
      option("", sceneLabels[""] ?? t(lang, "panel_preview_scene_no_filter"), scene === null),
      ...scenes.map((name) => option(`=${name}`, sceneLabels[name] ?? name, scene === name)),
    );
    // Nothing to choose from (no tool needs a capability or names a scene): no control.
    previewAs.hidden = list.length <= 1 && scenes.length === 0 && !active;

    previewing.hidden = active === null;
    previewingText.textContent = active?.text ?? "";
    previewingNote.textContent = t(lang, "panel_previewing_note");
    previewingReset.textContent = t(lang, "panel_preview_reset");
    return new Set(active?.changed ?? []);
  }


  return { bar: previewAs, notice: previewing, render };
}
