"""The structure of ``neta_nb``, checked with :mod:`ast` (the rules of
``docs/contributing.md``, "Structure"; they replace the old cap on a module's lines, which
was met by cutting classes into files):

1. **No class has more than 45 methods**, counted over the class and its *halves*: the
   in-package base classes that it alone uses as a base (and, through them, their own bases
   that only they use). A base shared by several classes — ``NetaWidget`` under every
   widget, ``Provider`` under every vendor — is an abstraction of its own and is not
   counted; a base that exists for one class is that class cut into another file, and its
   methods are the class's. A method and its overrides count once; a stub under
   ``if TYPE_CHECKING:`` not at all.
2. **No class declares its host's attributes or stubs its methods**: a class that is a base
   of another class of the package must not carry class-level annotations without a value
   that neither it nor its own bases ever set (the subclass sets them: they are the
   subclass's attributes), nor methods under ``if TYPE_CHECKING:`` whose body is only
   ``...``, ``pass`` or ``raise NotImplementedError`` (the subclass defines them). What
   declares fields or an interface is left alone: a ``Protocol``, a class with an
   ``@abstractmethod``, a dataclass (or attrs class), and a ``TypedDict``, ``NamedTuple``,
   pydantic model or ``Enum`` (directly or through its bases).
3. **No import only dodges a cycle**: an import inside a function or under
   ``if TYPE_CHECKING:`` whose target module already imports the importing module at module
   level (directly or through other modules of the package) hides a cycle instead of
   breaking it. Only modules of the package are followed, so the lazy import of an optional
   dependency (a vendor SDK, ``ray``, ``psycopg``, OpenTelemetry, …) is always allowed, and
   so is a lazy import of a module of the package that does not import the importer back.
4. **No folder holds more than 12 modules** (``__init__.py`` not counted; a subpackage is a
   folder of its own).
5. **Every folder is in the layout**: the tree of ``docs/contributing.md``, "Layout", names
   each package folder of ``neta_nb`` (with its job) and no folder that is gone.

Each rule is a function over a source tree that returns every offence with its file, line
and a one-line reason. The tests at the top run them on ``neta_nb``; the tests below them
write small trees into ``tmp_path`` and show that each rule fails on what it forbids and
passes what it allows.
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from collections import defaultdict, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "neta_nb"
MAX_METHODS = 45
MAX_MODULES_PER_FOLDER = 12

# The bases and decorators whose class-level annotations declare fields or an interface.
FIELD_BASES = frozenset({"TypedDict", "NamedTuple", "BaseModel", "RootModel", "Enum",
                         "IntEnum", "StrEnum", "Flag", "IntFlag"})
FIELD_DECORATORS = frozenset({"dataclass", "define", "frozen", "mutable", "attrs", "s"})
STUB_BODIES = ("...", "pass", "raise NotImplementedError")

ImportKind = Literal["module", "function", "typecheck"]
ClassKey = tuple[str, str]
"""A top-level class: its module's dotted name and its name."""


@dataclass(frozen=True, order=True)
class Offence:
    """One place that breaks a rule."""

    path: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}" if self.line else \
            f"{self.path}: {self.reason}"


@dataclass(frozen=True)
class Module:
    name: str
    path: str
    """From the tree's root, with ``/``."""
    tree: ast.Module
    is_package: bool

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    line: int
    kind: ImportKind


@dataclass
class ClassInfo:
    module: Module
    node: ast.ClassDef
    bases: list[ClassKey] = field(default_factory=list)
    """Its bases defined in the package."""
    outside_bases: list[str] = field(default_factory=list)
    """The last name of each base from outside the package (``Protocol``, ``BaseModel``)."""

    @property
    def name(self) -> str:
        return self.node.name


def _is_type_checking(test: ast.expr) -> bool:
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _statements(body: Sequence[ast.stmt], kind: ImportKind
                ) -> Iterator[tuple[ast.stmt, ImportKind]]:
    """Every statement under ``body``, with when it runs: at import (``module``), only for
    a type checker (``typecheck``) or when a function is called (``function``)."""
    for node in body:
        yield node, kind
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _statements(node.body, "function")
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _statements(node.body, "typecheck" if kind == "module" else kind)
            yield from _statements(node.orelse, kind)
        else:
            for name in ("body", "orelse", "finalbody"):
                yield from _statements(getattr(node, name, []), kind)
            for handler in getattr(node, "handlers", []):
                yield from _statements(handler.body, kind)
            for case in getattr(node, "cases", []):
                yield from _statements(case.body, kind)


class SourceTree:
    """The modules of one package under ``root``, parsed: its imports and its classes."""

    def __init__(self, root: Path, package: str) -> None:
        self.root = root
        self.package = package
        self.modules: dict[str, Module] = {}
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            parts = relative.with_suffix("").parts
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(relative))
            self.modules[name] = Module(name, relative.as_posix(), tree, is_package)
        self.imports = [imp for module in self.modules.values()
                        for imp in self._imports_of(module)]
        self.module_edges: dict[str, set[str]] = defaultdict(set)
        for imp in self.imports:
            if imp.kind == "module":
                self.module_edges[imp.importer].add(imp.target)
        self._names = {name: self._namespace(module) for name, module in self.modules.items()}
        self.classes = self._classes()
        self.users: dict[ClassKey, list[ClassKey]] = defaultdict(list)
        for key, info in self.classes.items():
            for base in info.bases:
                self.users[base].append(key)

    # -- imports --

    def _absolute(self, module: Module, name: str | None, level: int) -> str:
        if level == 0:
            return name or ""
        parts = module.package.split(".")
        base = ".".join(parts[: len(parts) - (level - 1)])
        return f"{base}.{name}" if name else base

    def _in_package(self, name: str) -> str | None:
        """The module of the package that importing ``name`` names (``None``: outside)."""
        while name and name not in self.modules:
            name = name.rpartition(".")[0]
        return name or None

    def _imports_of(self, module: Module) -> Iterator[Import]:
        for node, kind in _statements(module.tree.body, "module"):
            targets: list[str | None] = []
            if isinstance(node, ast.Import):
                targets = [self._in_package(alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = self._absolute(module, node.module, node.level)
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in self.modules
                           else self._in_package(base) for alias in node.names]
            for target in dict.fromkeys(targets):
                if target is not None and target != module.name:
                    yield Import(module.name, target, node.lineno, kind)

    def module_path(self, start: str, goal: str) -> list[str] | None:
        """A chain of module-level imports from ``start`` to ``goal`` (``None``: none)."""
        came_from: dict[str, str | None] = {start: None}
        queue = deque([start])
        while queue:
            current = queue.popleft()
            if current == goal:
                path: list[str] = []
                step: str | None = current
                while step is not None:
                    path.append(step)
                    step = came_from[step]
                return path[::-1]
            for target in sorted(self.module_edges.get(current, ())):
                if target not in came_from:
                    came_from[target] = current
                    queue.append(target)
        return None

    # -- classes --

    def _namespace(self, module: Module) -> dict[str, tuple[str, ...]]:
        """What each top-level name of ``module`` is: ``("class",)``, ``("module", m)``
        or ``("from", m, name)`` (imported from ``m``)."""
        names: dict[str, tuple[str, ...]] = {}
        for node, kind in _statements(module.tree.body, "module"):
            if kind == "function":
                continue
            if isinstance(node, ast.ClassDef) and node in module.tree.body:
                names[node.name] = ("class",)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        names[alias.asname] = ("module", alias.name)
                    else:
                        first = alias.name.partition(".")[0]
                        names[first] = ("module", first)
            elif isinstance(node, ast.ImportFrom):
                base = self._absolute(module, node.module, node.level)
                for alias in node.names:
                    names[alias.asname or alias.name] = ("from", base, alias.name)
        return names

    def resolve(self, module: str, name: str, depth: int = 0) -> ClassKey | str | None:
        """The class ``name`` is in ``module``: a key when the package defines it, the
        name when it comes from outside, ``None`` when it is a module."""
        if module not in self.modules:
            return name
        entry = self._names[module].get(name)
        if entry is None:
            return name  # a builtin (object, Exception, str)
        if entry[0] == "class":
            return (module, name)
        if entry[0] == "module" or depth > 20:
            return None
        source, imported = entry[1], entry[2]
        if f"{source}.{imported}" in self.modules:
            return None
        return self.resolve(source, imported, depth + 1)

    def _resolve_base(self, module: str, node: ast.expr) -> ClassKey | str | None:
        if isinstance(node, ast.Subscript):  # Generic[T], Protocol[T]
            node = node.value
        if isinstance(node, ast.Name):
            return self.resolve(module, node.id)
        if not isinstance(node, ast.Attribute):
            return None
        chain: list[str] = []
        inner: ast.expr = node
        while isinstance(inner, ast.Attribute):
            chain.insert(0, inner.attr)
            inner = inner.value
        if not isinstance(inner, ast.Name):
            return None
        entry = self._names.get(module, {}).get(inner.id)
        if entry is None or entry[0] == "class":
            return chain[-1]
        prefix = entry[1] if entry[0] == "module" else f"{entry[1]}.{entry[2]}"
        owner = ".".join([prefix, *chain[:-1]])
        return self.resolve(owner, chain[-1])

    def _classes(self) -> dict[ClassKey, ClassInfo]:
        classes: dict[ClassKey, ClassInfo] = {}
        for module in self.modules.values():
            for node, _ in _statements(module.tree.body, "module"):
                if not (isinstance(node, ast.ClassDef) and node in module.tree.body):
                    continue
                info = ClassInfo(module, node)
                for base in node.bases:
                    resolved = self._resolve_base(module.name, base)
                    if isinstance(resolved, tuple):
                        info.bases.append(resolved)
                    elif resolved is not None:
                        info.outside_bases.append(resolved.rpartition(".")[2])
                classes[(module.name, node.name)] = info
        return classes

    def halves(self, key: ClassKey) -> list[ClassKey]:
        """The in-package bases that only this class uses, and theirs in turn."""
        found: list[ClassKey] = []
        for base in self.classes[key].bases:
            if base in self.classes and self.users[base] == [key]:
                found += [base, *self.halves(base)]
        return found

    def ancestors(self, key: ClassKey) -> list[ClassKey]:
        """Every in-package base of the class, near ones first."""
        found: list[ClassKey] = []
        for base in self.classes[key].bases if key in self.classes else ():
            if base not in found:
                found += [base, *(a for a in self.ancestors(base) if a not in found)]
        return found


# -- what a class body holds --


def _body_statements(body: Sequence[ast.stmt], *, type_checking: bool = False
                     ) -> Iterator[tuple[ast.stmt, bool]]:
    """The statements of a class body, looking into its ``if`` blocks; with whether each is
    under ``if TYPE_CHECKING:``."""
    for node in body:
        if isinstance(node, ast.If):
            inner = type_checking or _is_type_checking(node.test)
            yield from _body_statements(node.body, type_checking=inner)
            yield from _body_statements(node.orelse, type_checking=type_checking)
        else:
            yield node, type_checking


def _methods(node: ast.ClassDef) -> set[str]:
    """The names of the methods a class defines (stubs for a type checker excluded)."""
    return {statement.name for statement, type_checking in _body_statements(node.body)
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)
            and not type_checking}


def _bare_annotations(node: ast.ClassDef) -> dict[str, int]:
    """The class-level annotations without a value: name → line."""
    return {statement.target.id: statement.lineno
            for statement, _ in _body_statements(node.body)
            if isinstance(statement, ast.AnnAssign) and statement.value is None
            and isinstance(statement.target, ast.Name)}


def _assigned(node: ast.ClassDef) -> set[str]:
    """The attributes the class sets: a class-level value, or ``self.x = …`` (also
    annotated or augmented) in any of its methods."""
    names: set[str] = set()
    for statement, _ in _body_statements(node.body):
        if isinstance(statement, ast.Assign):
            names |= {t.id for t in statement.targets if isinstance(t, ast.Name)}
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None \
                and isinstance(statement.target, ast.Name):
            names.add(statement.target.id)
    for inner in ast.walk(node):
        if isinstance(inner, ast.Attribute) and isinstance(inner.ctx, ast.Store) \
                and isinstance(inner.value, ast.Name) and inner.value.id == "self":
            names.add(inner.attr)
    return names


def _decorator_names(node: ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    names: set[str] = set()
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Name):
            names.add(target.id)
        elif isinstance(target, ast.Attribute):
            names.add(target.attr)
    return names


def _is_stub(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str) and len(body) > 1:
        body = body[1:]  # its docstring
    if len(body) != 1:
        return False
    text = ast.unparse(body[0])
    return text in STUB_BODIES or text.startswith("raise NotImplementedError(")


def _declares_fields_or_interface(tree: SourceTree, key: ClassKey) -> bool:
    """A Protocol, an abstract class, a dataclass, or a record type (its annotations are
    fields or an interface, not a host's attributes)."""
    node = tree.classes[key].node
    if "Protocol" in tree.classes[key].outside_bases:
        return True
    if _decorator_names(node) & FIELD_DECORATORS:
        return True
    if any("abstractmethod" in _decorator_names(statement)
           for statement, _ in _body_statements(node.body)
           if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef)):
        return True
    lineage = [key, *tree.ancestors(key)]
    return any(FIELD_BASES & set(tree.classes[k].outside_bases)
               for k in lineage if k in tree.classes)


# -- the rules --


def classes_over_method_limit(tree: SourceTree, limit: int = MAX_METHODS) -> list[Offence]:
    """Rule 1: classes with more than ``limit`` methods over themselves and their halves."""
    offences = []
    for key, info in tree.classes.items():
        halves = tree.halves(key)
        own = _methods(info.node)
        every = own.union(*(_methods(tree.classes[half].node) for half in halves))
        if len(every) > limit:
            parts = (f", {len(every) - len(own)} more from {' < '.join(h[1] for h in halves)}"
                     f" (bases only it uses)" if halves else "")
            offences.append(Offence(
                info.module.path, info.node.lineno,
                f"{info.name} has {len(every)} methods ({len(own)} its own{parts}), more "
                f"than {limit}: give one of its jobs an object of its own"))
    return sorted(offences)


def classes_that_declare_their_host(tree: SourceTree) -> list[Offence]:
    """Rule 2: bases that declare attributes only their subclasses set, or stub their
    subclasses' methods under ``if TYPE_CHECKING:``."""
    offences = []
    for key, info in tree.classes.items():
        hosts = tree.users[key]
        if not hosts or _declares_fields_or_interface(tree, key):
            continue
        host_names = ", ".join(sorted(h[1] for h in hosts))
        set_above = set[str]().union(*(_assigned(tree.classes[k].node)
                                  for k in [key, *tree.ancestors(key)] if k in tree.classes))
        unset = {name: line for name, line in _bare_annotations(info.node).items()
                 if name not in set_above}
        if unset:
            offences.append(Offence(
                info.module.path, min(unset.values()),
                f"{info.name} declares {len(unset)} attributes it never sets "
                f"({', '.join(list(unset)[:4])}{', …' if len(unset) > 4 else ''}): they are "
                f"its subclass {host_names}'s — a class split in halves"))
        stubs = [statement for statement, type_checking in _body_statements(info.node.body)
                 if type_checking and isinstance(statement, ast.FunctionDef
                                                 | ast.AsyncFunctionDef)
                 and _is_stub(statement)]
        if stubs:
            offences.append(Offence(
                info.module.path, stubs[0].lineno,
                f"{info.name} stubs {len(stubs)} methods under TYPE_CHECKING "
                f"({', '.join(s.name for s in stubs[:4])}{', …' if len(stubs) > 4 else ''}):"
                f" they are its subclass {host_names}'s — a class split in halves"))
    return sorted(offences)


def imports_that_dodge_a_cycle(tree: SourceTree,
                               named: frozenset[tuple[str, str]] = frozenset()
                               ) -> list[Offence]:
    """Rule 3: imports inside a function or under ``TYPE_CHECKING`` of a module that
    already imports the importer at module level — but for the deliberate ones ``named``
    (importer, target) in the import-linter contract, each with its reason."""
    offences = []
    for imp in tree.imports:
        if imp.kind == "module" or (imp.importer, imp.target) in named:
            continue
        chain = tree.module_path(imp.target, imp.importer)
        if chain is None:
            continue
        where = "inside a function" if imp.kind == "function" else "under TYPE_CHECKING"
        offences.append(Offence(
            tree.modules[imp.importer].path, imp.line,
            f"imports {imp.target} {where}, which already imports {imp.importer} at module "
            f"level ({' → '.join(chain)}): the import only hides a cycle"))
    return sorted(offences)


def folders_over_module_limit(tree: SourceTree,
                              limit: int = MAX_MODULES_PER_FOLDER) -> list[Offence]:
    """Rule 4: folders holding more than ``limit`` modules."""
    counts: dict[str, int] = defaultdict(int)
    for module in tree.modules.values():
        if not module.is_package:
            counts[module.path.rpartition("/")[0]] += 1
    return sorted(Offence(f"{folder}/", 0,
                          f"{count} modules, more than {limit}: group them by job in "
                          f"subpackages") for folder, count in counts.items() if count > limit)


# A folder line of the Layout section's tree: its name and "/" after two spaces per level
# (what follows on the line, and the continuation lines further right, say its job).
LAYOUT_FOLDER = re.compile(r"^((?:  ){0,8})([A-Za-z_][A-Za-z0-9_]*)/(?:\s|$)")


def documented_folders(text: str, package: str = PACKAGE) -> set[str]:
    """Rule 5: the folders under ``package/`` that the first tree (a fenced block) of the
    "Layout" section of ``text`` names, as paths (``neta_nb/runtime/session``)."""
    section = text.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```", 2)[1]
    found: set[str] = set()
    path: list[str] = []
    for line in block.splitlines():
        match = LAYOUT_FOLDER.match(line)
        if match is None:
            continue
        depth = len(match.group(1)) // 2
        path = [*path[:depth], match.group(2)]
        found.add("/".join(path))
    return {folder for folder in found if folder.split("/")[0] == package}


def layout_gaps(tree: SourceTree, text: str) -> list[Offence]:
    """Rule 5: package folders the layout leaves out, and folders it names that are gone."""
    folders = {module.path.rpartition("/")[0] for module in tree.modules.values()
               if module.is_package}
    named = documented_folders(text, tree.package)
    return sorted([Offence(f"{folder}/", 0, "missing from the Layout section: add it "
                           "with its job") for folder in folders - named]
                  + [Offence(f"{folder}/", 0, "named in the Layout section but gone")
                     for folder in named - folders])


# -- the rules on neta_nb --


@functools.cache
def _neta_nb() -> SourceTree:
    return SourceTree(ROOT, PACKAGE)


def _report(rule: str, offences: list[Offence]) -> str:
    return f"{rule} (docs/contributing.md, Structure):\n" + "\n".join(map(str, offences))


def test_no_class_has_more_than_45_methods() -> None:
    offences = classes_over_method_limit(_neta_nb())
    assert not offences, _report("Classes over 45 methods", offences)


def test_no_class_declares_its_hosts_attributes_or_stubs_its_methods() -> None:
    offences = classes_that_declare_their_host(_neta_nb())
    assert not offences, _report("Classes that are half of another", offences)


def contract_exceptions() -> frozenset[tuple[str, str]]:
    """The imports the import-linter contracts name as deliberate (every contract's
    ``ignore_imports`` in pyproject.toml: the layers' upward ones, the widgets imported
    when first shown): each there with a comment that gives its reason."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    named = set()
    for contract in config["tool"]["importlinter"]["contracts"]:
        for line in contract.get("ignore_imports", []):
            importer, _, target = (part.strip() for part in line.partition("->"))
            named.add((importer, target))
    return frozenset(named)


def test_no_import_only_dodges_a_cycle() -> None:
    named = contract_exceptions()
    # Each named exception has its reason: a comment just above it, or above the group of
    # exceptions it is listed in, in pyproject.toml.
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8").splitlines()
    for importer, target in named:
        line = next(i for i, row in enumerate(text) if f'"{importer} -> {target}"' in row)
        while text[line - 1].strip().startswith('"') and " -> " in text[line - 1]:
            line -= 1
        assert text[line - 1].strip().startswith("#"), (importer, target)
    offences = imports_that_dodge_a_cycle(_neta_nb(), named)
    assert not offences, _report("Imports that hide a cycle", offences)


def test_no_folder_holds_more_than_12_modules() -> None:
    offences = folders_over_module_limit(_neta_nb())
    assert not offences, _report("Folders over 12 modules", offences)


def test_the_layout_names_every_folder() -> None:
    text = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    offences = layout_gaps(_neta_nb(), text)
    assert not offences, ("docs/contributing.md, Layout, and the folders of neta_nb:\n"
                          + "\n".join(map(str, offences)))


def test_the_rules_are_the_documented_ones() -> None:
    text = (ROOT / "docs" / "contributing.md").read_text(encoding="utf-8")
    section = text.split("\n## Structure\n", 1)[1].split("\n## ", 1)[0]
    assert "tests/test_layout.py" in section
    assert f"more than {MAX_METHODS} methods" in section
    assert f"more than {MAX_MODULES_PER_FOLDER} modules" in section


def test_the_tree_is_read_whole() -> None:
    """The rules see the package: its modules, its classes, their bases resolved through
    re-exports, and the imports of every kind (an empty or misread tree would pass them
    all)."""
    tree = _neta_nb()
    assert len(tree.modules) > 100
    assert tree.resolve("neta_nb", "AgentSession") == ("neta_nb.runtime.session.session",
                                                       "AgentSession")
    chat = tree.classes[("neta_nb.widgets.chat.view", "ChatView")]
    assert chat.bases == [("neta_nb.widgets.base", "NetaWidget")]
    assert len(tree.users[("neta_nb.widgets.base", "NetaWidget")]) > 5
    assert {imp.kind for imp in tree.imports} == {"module", "function", "typecheck"}


# -- each rule on small trees: it fails on what it forbids, passes what it allows --


def _tree(tmp_path: Path, files: dict[str, str]) -> SourceTree:
    for name, text in {"pkg/__init__.py": "", **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return SourceTree(tmp_path, "pkg")


def _class(name: str, methods: int, bases: str = "", prefix: str = "m") -> str:
    body = "".join(f"    def {prefix}{i}(self) -> None: ...\n" for i in range(methods))
    return f"class {name}({bases}):\n{body or '    pass'}\n"


def test_a_class_over_45_methods_fails_and_one_of_45_passes(tmp_path: Path) -> None:
    """What a type checker alone sees is no method."""
    stub = "    if TYPE_CHECKING:\n        def declared(self) -> int: ...\n"
    tree = _tree(tmp_path, {"pkg/big.py": _class("Big", 46) + _class("Fits", 45) + stub})
    assert [str(o) for o in classes_over_method_limit(tree)] == [
        "pkg/big.py:1: Big has 46 methods (46 its own), more than 45: give one of its jobs "
        "an object of its own"]


def test_the_halves_of_a_class_count_as_its_methods(tmp_path: Path) -> None:
    """A class cut into a base only it uses (itself over a base only that one uses) has
    their methods; an override counts once."""
    tree = _tree(tmp_path, {
        "pkg/lower.py": _class("Lower", 10, prefix="low"),
        "pkg/half.py": "from .lower import Lower\n\n" + _class("Half", 10, "Lower", "half"),
        "pkg/host.py": ("from .half import Half\n\n"
                        + _class("Host", 30, "Half") + "    def half0(self) -> None: ...\n"),
    })
    offences = classes_over_method_limit(tree)
    assert [(o.path, o.line) for o in offences] == [("pkg/host.py", 3)]
    assert "50 methods (31 its own, 19 more from Half < Lower" in offences[0].reason


def test_a_shared_base_is_not_counted(tmp_path: Path) -> None:
    """A base used by two classes is an abstraction of its own: its 40 methods are not
    theirs, however many they are."""
    tree = _tree(tmp_path, {
        "pkg/base.py": _class("Shared", 40, prefix="shared"),
        "pkg/widgets.py": ("from .base import Shared\n\n" + _class("One", 30, "Shared")
                           + _class("Two", 30, "Shared")),
    })
    assert classes_over_method_limit(tree) == []


MIXIN_HALF = '''\
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .host import Host


class Half:
    name: str
    count: int
    kept: int
    limit: int = 3

    if TYPE_CHECKING:
        def save(self) -> None: ...
        @property
        def running(self) -> bool:
            """Whether a turn runs."""
            raise NotImplementedError

    def step(self) -> None:
        self.kept = self.count + self.limit
        self.save()
'''
MIXIN_HOST = '''\
from .half import Half


class Host(Half):
    def __init__(self) -> None:
        self.name = "x"
        self.count = 0

    def save(self) -> None: ...
'''


def test_a_mixin_half_fails(tmp_path: Path) -> None:
    """The base declares two attributes only its host sets and stubs two of its methods
    (``kept`` it sets itself, ``limit`` has a value): both are reported where they are."""
    tree = _tree(tmp_path, {"pkg/half.py": MIXIN_HALF, "pkg/host.py": MIXIN_HOST})
    assert [str(o) for o in classes_that_declare_their_host(tree)] == [
        "pkg/half.py:8: Half declares 2 attributes it never sets (name, count): they are "
        "its subclass Host's — a class split in halves",
        "pkg/half.py:14: Half stubs 2 methods under TYPE_CHECKING (save, running): they "
        "are its subclass Host's — a class split in halves",
    ]
    # Its TYPE_CHECKING import of the host is one that only hides a cycle.
    assert [(o.path, o.line) for o in imports_that_dodge_a_cycle(tree)] == [
        ("pkg/half.py", 4)]


DECLARATIONS_ALLOWED = '''\
import dataclasses
import enum
from abc import ABC, abstractmethod
from typing import NamedTuple, Protocol, TypedDict

from pydantic import BaseModel


class Chat(Protocol):
    lang: str
    def send(self, text: str) -> None: ...


class LiveChat(Chat, Protocol):
    session_id: str


class Provider(ABC):
    supplier: str
    model: str

    @abstractmethod
    def stream(self) -> None: ...


@dataclasses.dataclass
class Row:
    index: int


class Part(BaseModel):
    kind: str


class _Model(BaseModel):
    pass


class Text(_Model):
    text: str


class Reply(TypedDict):
    id: str


class Pair(NamedTuple):
    left: int


class Level(enum.Enum):
    LOW = 1


class Owned:
    """Declares what its own __init__ sets: not its subclass's."""
    size: int

    def __init__(self) -> None:
        self.size = 1


class Narrowed(Owned):
    size: int


class OpenAI(Provider):
    pass
class Scripted(Provider):
    pass
class Wide(Row):
    pass
class TextPart(Part):
    pass
class Bold(Text):
    pass
class Tagged(Reply):
    pass
class Sized(Narrowed):
    pass
class Solo:
    """Declares attributes but is nobody's base."""
    value: int
'''


def test_protocols_abstract_classes_and_records_pass(tmp_path: Path) -> None:
    """Annotations that declare an interface or fields are not a host's attributes: a
    Protocol (and one over another), an ABC with an abstract method, a dataclass, pydantic
    models (also through an in-package base), a TypedDict, a NamedTuple, an Enum, a base
    re-declaring what its own base sets, and a class that is no one's base."""
    tree = _tree(tmp_path, {"pkg/kinds.py": DECLARATIONS_ALLOWED})
    assert classes_that_declare_their_host(tree) == []


def test_an_abstract_base_without_an_abstract_method_is_a_half(tmp_path: Path) -> None:
    """``ABC`` among the bases is not enough: what is abstract is declared so."""
    tree = _tree(tmp_path, {"pkg/a.py": ("from abc import ABC\n\n\nclass Half(ABC):\n"
                                         "    name: str\n\n\nclass Host(Half):\n"
                                         "    def __init__(self) -> None:\n"
                                         "        self.name = 'x'\n")})
    assert [(o.path, o.line) for o in classes_that_declare_their_host(tree)] == [
        ("pkg/a.py", 5)]


CYCLE = {
    "pkg/session.py": "from .branches import fork\n\n\nclass Session:\n    pass\n",
    "pkg/branches.py": ("from typing import TYPE_CHECKING\n\n"
                        "if TYPE_CHECKING:\n    from .session import Session\n\n\n"
                        "def fork(session: 'Session') -> 'Session':\n"
                        "    from .session import Session\n\n"
                        "    return Session()\n"),
}


def test_an_import_that_dodges_a_cycle_fails(tmp_path: Path) -> None:
    """Both imports of ``session`` from ``branches`` (which ``session`` imports at module
    level) are reported, each with its line and the chain that closes the cycle."""
    tree = _tree(tmp_path, CYCLE)
    assert [str(o) for o in imports_that_dodge_a_cycle(tree)] == [
        "pkg/branches.py:4: imports pkg.session under TYPE_CHECKING, which already imports "
        "pkg.branches at module level (pkg.session → pkg.branches): the import only hides "
        "a cycle",
        "pkg/branches.py:8: imports pkg.session inside a function, which already imports "
        "pkg.branches at module level (pkg.session → pkg.branches): the import only hides "
        "a cycle",
    ]


def test_a_cycle_through_other_modules_is_found(tmp_path: Path) -> None:
    tree = _tree(tmp_path, {
        "pkg/sub/__init__.py": "",
        "pkg/sub/top.py": "from ..middle import Middle\n",
        "pkg/middle.py": "import pkg.low\n\nMiddle = 1\n",
        "pkg/low.py": "def use() -> None:\n    from pkg.sub import top\n",
    })
    offences = imports_that_dodge_a_cycle(tree)
    assert [(o.path, o.line) for o in offences] == [("pkg/low.py", 2)]
    assert "(pkg.sub.top → pkg.middle → pkg.low)" in offences[0].reason


def test_an_import_the_contract_names_is_allowed_and_only_that_one(tmp_path: Path) -> None:
    tree = _tree(tmp_path, CYCLE)
    allowed = imports_that_dodge_a_cycle(tree, frozenset({("pkg.branches", "pkg.session")}))
    assert allowed == []
    other = imports_that_dodge_a_cycle(tree, frozenset({("pkg.session", "pkg.branches")}))
    assert len(other) == 2
    assert ("neta_nb.runtime.agent", "neta_nb.batch.run") in contract_exceptions()


def test_lazy_imports_that_close_no_cycle_pass(tmp_path: Path) -> None:
    """An optional dependency imported where it is needed (outside the package, installed
    or not), a lazy import of a module that does not import the importer back, and a
    TYPE_CHECKING import of one are all allowed."""
    tree = _tree(tmp_path, {
        "pkg/backend.py": ("from typing import TYPE_CHECKING\n\n"
                           "if TYPE_CHECKING:\n    import ray\n    from .heavy import Table\n\n\n"
                           "def start() -> None:\n    import ray\n    import psycopg\n"
                           "    from . import heavy\n    from .heavy import Table\n"),
        "pkg/heavy.py": "import json\n\nTable = dict\n",
    })
    assert {imp.kind for imp in tree.imports} == {"function", "typecheck"}
    assert imports_that_dodge_a_cycle(tree) == []


def test_a_folder_over_12_modules_fails_and_one_of_12_passes(tmp_path: Path) -> None:
    files = {f"pkg/big/m{i}.py": "" for i in range(13)}
    files |= {f"pkg/fits/m{i}.py": "" for i in range(12)}
    files |= {"pkg/big/__init__.py": "", "pkg/fits/__init__.py": ""}
    assert [str(o) for o in folders_over_module_limit(_tree(tmp_path, files))] == [
        "pkg/big/: 13 modules, more than 12: group them by job in subpackages"]


LAYOUT = """# Contributing

## Layout

```
pkg/
  core.py                 the core
  a/                      the a part
    b/                    its b part: c/ and
                          d/ (continuation lines name no folder)
benchmarks/               not the package
```

## Layers
"""


def test_the_layout_names_folders_by_their_indentation() -> None:
    assert documented_folders(LAYOUT, "pkg") == {"pkg", "pkg/a", "pkg/a/b"}


def test_a_folder_missing_from_the_layout_fails_and_a_gone_one_too(tmp_path: Path) -> None:
    files = {"pkg/a/__init__.py": "", "pkg/a/b/__init__.py": "", "pkg/e/__init__.py": ""}
    assert [str(o) for o in layout_gaps(_tree(tmp_path, files), LAYOUT)] == [
        "pkg/e/: missing from the Layout section: add it with its job"]
    (tmp_path / "pkg" / "e" / "__init__.py").unlink()
    assert layout_gaps(SourceTree(tmp_path, "pkg"), LAYOUT) == []
    (tmp_path / "pkg" / "a" / "b" / "__init__.py").unlink()
    assert [str(o) for o in layout_gaps(SourceTree(tmp_path, "pkg"), LAYOUT)] == [
        "pkg/a/b/: named in the Layout section but gone"]
