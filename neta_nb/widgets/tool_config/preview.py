"""The tool configuration panel's "preview as" choices: the models and scenes worth
previewing, built from what the catalog's tools actually require (only those can change
what is available)."""

from __future__ import annotations

from collections.abc import Iterable

from ...labels import t
from ...tools import ToolCatalog
from .traits import PreviewChoice

__all__ = ["known_scenes", "needed_capabilities", "preview_choices", "scene_label"]


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
