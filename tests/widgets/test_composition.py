"""Widgets are composed, not cut into files (DESIGN §1): a widget's only in-package base
is ``NetaWidget``, and no class of the widgets declares attributes that another class
(the one it is mixed into) sets — a big widget owns collaborators that are given what
they need."""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import typing
from types import ModuleType

import neta_nb.widgets
from neta_nb.widgets.base import NetaWidget


def _widget_modules() -> list[ModuleType]:
    return [importlib.import_module(info.name) for info in
            pkgutil.walk_packages(neta_nb.widgets.__path__, "neta_nb.widgets.")]


def _classes() -> list[type]:
    return [value for module in _widget_modules() for value in vars(module).values()
            if inspect.isclass(value) and value.__module__ == module.__name__]


def test_a_widgets_only_in_package_base_is_neta_widget() -> None:
    widgets = [cls for cls in _classes() if issubclass(cls, NetaWidget) and cls is not NetaWidget]
    assert {cls.__name__ for cls in widgets} >= {"ChatView", "BatchGrid", "ToolConfigPanel"}
    chains = {cls.__name__: [base.__name__ for base in cls.__mro__[1:]
                             if base.__module__.startswith("neta_nb.") and base is not NetaWidget]
              for cls in widgets}
    assert {name: bases for name, bases in chains.items() if bases} == {}


def test_no_widget_class_declares_attributes_it_does_not_hold() -> None:
    # A bare class-level annotation (``lang: str`` with no value) in a class that is not a
    # record type declares an attribute some other class sets: a mixin half.
    def record_type(cls: type) -> bool:
        return (typing.is_typeddict(cls) or dataclasses.is_dataclass(cls)
                or issubclass(cls, tuple) or bool(getattr(cls, "_is_protocol", False)))

    declared = {f"{cls.__module__}.{cls.__qualname__}": bare for cls in _classes()
                if not record_type(cls)
                and (bare := [name for name in vars(cls).get("__annotations__", {})
                              if name not in vars(cls)])}
    assert declared == {}
