"""ToolCatalog: registration, lookup, categories, core set, global switch, notification."""

from __future__ import annotations

import pytest

from neta_nb.tools import SEED_CATEGORIES, ToolCatalog

from ..support.tools import make_tool


def test_register_lookup_and_containers() -> None:
    catalog = ToolCatalog()
    first = make_tool("alpha")
    assert catalog.register(first) is first
    assert catalog.get("alpha") is first
    assert catalog["alpha"] is first
    assert "alpha" in catalog
    assert "beta" not in catalog
    assert catalog.get("beta") is None
    assert len(catalog) == 1
    assert list(catalog) == [first]
    assert catalog.names == ["alpha"]
    with pytest.raises(KeyError, match="no tool named 'beta'"):
        catalog["beta"]


def test_duplicate_names_are_refused() -> None:
    catalog = ToolCatalog([make_tool("alpha")])
    with pytest.raises(ValueError, match="'alpha' is already registered"):
        catalog.register(make_tool("alpha"))
    with pytest.raises(ValueError, match="already registered"):
        ToolCatalog([make_tool("x"), make_tool("x")])


def test_register_refuses_non_tools() -> None:
    with pytest.raises(TypeError, match="decorate the function with @tool"):
        ToolCatalog().register(lambda: None)  # type: ignore[arg-type]


def test_replace_tools_swaps_a_group_as_one_change() -> None:
    catalog = ToolCatalog([make_tool("keep"), make_tool("old"), make_tool("gone")])
    catalog.disable("old")
    seen: list[list[str]] = []
    catalog.subscribe(lambda changed: seen.append(changed.names))
    catalog.replace_tools(remove=["old", "gone", "never"], add=[make_tool("old"),
                                                                make_tool("new")],
                          disable=["new"])
    assert seen == [["keep", "old", "new"]]  # the listeners see it once, complete
    assert catalog.globally_disabled == frozenset({"old", "new"})


def test_replace_tools_refuses_a_bad_group_before_changing_anything() -> None:
    catalog = ToolCatalog([make_tool("keep"), make_tool("old")])
    seen: list[int] = []
    catalog.subscribe(lambda changed: seen.append(changed.version))
    with pytest.raises(ValueError, match="'twice' is already registered"):
        catalog.replace_tools(remove=["old"], add=[make_tool("twice"), make_tool("twice")])
    with pytest.raises(ValueError, match="'keep' is already registered"):
        catalog.replace_tools(remove=["old"], add=[make_tool("keep")])
    with pytest.raises(TypeError, match="decorate the function with @tool"):
        catalog.replace_tools(remove=["old"], add=[lambda: None])  # type: ignore[list-item]
    assert catalog.names == ["keep", "old"] and "twice" not in catalog and seen == []


def test_categories_follow_seed_order_then_custom_in_registration_order() -> None:
    catalog = ToolCatalog([
        make_tool("z_custom", category="zeta"),
        make_tool("doc", category="document"),
        make_tool("b2"), make_tool("b1"),
        make_tool("a_custom", category="alpha"),
        make_tool("plan", category="planning"),
    ])
    groups = catalog.categories()
    assert list(groups) == ["base", "planning", "document", "zeta", "alpha"]
    assert [t.name for t in groups["base"]] == ["b1", "b2"]
    assert [t.name for t in catalog.ordered()] == ["b1", "b2", "plan", "doc", "z_custom",
                                                    "a_custom"]
    assert SEED_CATEGORIES == ("base", "planning", "interaction", "memory", "skill", "crew",
                               "vision", "document")


def test_core_tools(catalog: ToolCatalog) -> None:
    assert [t.name for t in catalog.core_tools()] == ["core_gone", "read", "todo"]


def test_global_disable_and_enable(catalog: ToolCatalog) -> None:
    assert catalog.is_globally_enabled("search")
    catalog.disable("search")
    assert not catalog.is_globally_enabled("search")
    catalog.enable("search")
    assert catalog.is_globally_enabled("search")
    assert not catalog.is_globally_enabled("gone")
    assert not catalog.is_globally_enabled("never-registered")
    assert catalog.globally_disabled == frozenset({"gone", "core_gone"})
    with pytest.raises(KeyError, match="no tool named 'nope'"):
        catalog.disable("nope")
    with pytest.raises(KeyError, match="no tool named 'nope'"):
        catalog.enable("nope")


def test_subscribers_hear_every_change_once_and_can_leave(catalog: ToolCatalog) -> None:
    heard: list[int] = []
    unsubscribe = catalog.subscribe(lambda c: heard.append(c.version))
    start = catalog.version
    catalog.disable("search")
    catalog.disable("search")  # no change, no call
    catalog.enable("search")
    catalog.register(make_tool("new"))
    catalog.unregister("new")
    assert heard == [start + 1, start + 2, start + 3, start + 4]
    unsubscribe()
    catalog.disable("search")
    assert len(heard) == 4
    unsubscribe()  # twice is harmless


def test_unregister_drops_global_state(catalog: ToolCatalog) -> None:
    catalog.unregister("gone")
    assert "gone" not in catalog
    assert "gone" not in catalog.globally_disabled
    with pytest.raises(KeyError):
        catalog.unregister("gone")


def test_default_catalog_holds_the_builtins() -> None:
    catalog = ToolCatalog.default()
    assert catalog.names == ["todo", "read_file", "list_files", "python", "list_variables",
                             "profile_table", "delegate", "read_notebook", "edit_cell",
                             "insert_cell", "run_cell", "delete_cell", "move_cell",
                             "clear_outputs", "run_all", "interrupt_kernel",
                             "restart_kernel", "list_notebooks", "create_notebook",
                             "cell_status"]
    assert [t.name for t in catalog.core_tools()] == ["list_files", "read_file", "todo",
                                                     "profile_table", "delegate"]
    assert [t.name for t in catalog if t.category == "notebook"] == [
        "read_notebook", "edit_cell", "insert_cell", "run_cell", "delete_cell", "move_cell",
        "clear_outputs", "run_all", "interrupt_kernel", "restart_kernel", "list_notebooks",
        "create_notebook", "cell_status"]
    assert [t.name for t in catalog if t.needs_notebook_page] == [
        "edit_cell", "insert_cell", "run_cell", "delete_cell", "move_cell", "clear_outputs",
        "run_all", "interrupt_kernel", "restart_kernel", "list_notebooks", "create_notebook",
        "cell_status"]
    assert catalog["run_cell"].requires_approval
    assert not catalog["python"].core
    assert catalog["python"].requires_approval
    assert not catalog["list_variables"].core
    assert catalog["list_variables"].category == "base"
    assert catalog["todo"].visibility == "internal"
    assert catalog["profile_table"].visibility == "skill"
    # Each call builds a separate catalog: a global switch in one does not leak.
    catalog.disable("python")
    assert ToolCatalog.default().is_globally_enabled("python")
