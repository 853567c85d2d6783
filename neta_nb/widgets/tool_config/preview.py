"""The tool configuration panel's "preview as" choices: the models and scenes worth
previewing, built from what the catalog's tools actually require (only those can change
what is available)."""

from __future__ import annotations

from collections.abc import Iterable

from ...labels import t
from ...tools import ToolCatalog, ToolResolution
from .traits import PreviewAs, PreviewChoice

__all__ = ["known_scenes", "needed_capabilities", "preview_choices", "preview_state",
           "scene_label"]


def needed_capabilities(catalog: ToolCatalog) -> list[str]:
    """The capabilities some tool of the catalog needs."""
    return sorted({name for item in catalog.ordered() for name in item.capabilities})


def known_scenes(catalog: ToolCatalog, agent_scene: str | None) -> list[str]:
    """Every scene a tool mentions, and the agent's own."""
    scenes = {scene for item in catalog.ordered() for scene in item.scenes or ()}
    if agent_scene is not None:
        scenes.add(agent_scene)
    return sorted(scenes)


def preview_choices(catalog: ToolCatalog, own: Iterable[str] | None, model: str | None,
                    lang: str) -> list[PreviewChoice]:
    """The model choices: the agent's own, then choices built from the capabilities the
    catalog's tools need."""
    needed = needed_capabilities(catalog)
    own_set = None if own is None else set(own)
    # Capabilities the model has that no tool needs are kept in every choice, so a
    # choice differs from the model only in what matters here.
    base = set(own_set or ()) - set(needed)
    listed = ", ".join(needed)
    choices: list[PreviewChoice] = [{
        "id": "model", "capabilities": None if own_set is None else sorted(own_set),
        "label": (t("panel_preview_model_named", lang, model=model) if model
                  else t("panel_preview_model", lang))}]
    if not needed:
        return choices
    choices.append({"id": "all", "capabilities": sorted(base | set(needed)),
                    "label": t("panel_preview_model_all", lang, capabilities=listed)})
    for capability in needed:
        choices.append({"id": f"without:{capability}",
                        "capabilities": sorted((base | set(needed)) - {capability}),
                        "label": t("panel_preview_model_without", lang,
                                   capability=capability)})
    if len(needed) > 1:  # with one, "without it" already is "without any"
        choices.append({"id": "none", "capabilities": sorted(base),
                        "label": t("panel_preview_model_none", lang, capabilities=listed)})
    return choices


def scene_label(scene: str | None, agent_scene: str | None, lang: str) -> str:
    if scene == agent_scene:
        return (t("panel_preview_scene_agent", lang, scene=scene) if scene is not None
                else t("panel_preview_scene_no_filter", lang))
    return (t("panel_preview_scene_no_filter", lang) if scene is None
            else t("panel_preview_scene_named", lang, scene=scene))


def preview_state(preview: tuple[frozenset[str] | None, str | None],
                  choices: list[PreviewChoice], *, agent_scene: str | None,
                  catalog: ToolCatalog, real: ToolResolution, shown: ToolResolution,
                  lang: str) -> PreviewAs:
    """What the view shows of an active preview: the choice it matches (or ``custom``),
    a sentence saying what is previewed, and the tools whose availability it changes."""
    capabilities, scene = preview
    wanted = None if capabilities is None else sorted(capabilities)
    # The agent's own model first: "all" may hold the same capabilities.
    choice = next((entry for entry in choices if entry["capabilities"] == wanted), None)
    if choice is not None:
        model_words = choice["label"]
    elif wanted:
        model_words = t("panel_preview_model_custom", lang, capabilities=", ".join(wanted))
    else:
        model_words = t("panel_preview_model_no_capabilities", lang)
    words = [model_words]
    if scene is not None or agent_scene is not None:  # no scene on either side: unsaid
        words.append(scene_label(scene, agent_scene, lang))
    if lang == "en":
        # The words continue a sentence ("Previewing as a model without vision").
        words = [word[:1].lower() + word[1:] for word in words]
    what = " · ".join(words)
    available, previewed = set(real.names), set(shown.names)
    return {"capabilities": wanted, "scene": scene,
            "choice": choice["id"] if choice is not None else "custom",
            "text": t("panel_previewing", lang, what=what),
            "changed": [item.name for item in catalog.ordered()
                        if (item.name in available) != (item.name in previewed)]}
