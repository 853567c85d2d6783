"""``list_variables``: the user's variables with type, shape, dtypes and a preview;
IPython's machinery, modules and private names left out; bounded."""

from __future__ import annotations

import collections
import json
import threading
import weakref
from typing import Any, NoReturn
from unittest.mock import NonCallableMock, PropertyMock

import pytest

from neta_nb import AgentToolConfig, ToolCatalog, ToolContext, resolve_tools
from neta_nb.tools.builtin.variables import MAX_VARIABLES, describe_variables, list_variables

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")


async def test_lists_user_data_with_shapes_dtypes_and_previews() -> None:
    namespace = {
        "sales": pd.DataFrame({"region": ["n", "s"], "amount": [1.5, 2.0]}),
        "grid": np.zeros((3, 4), dtype="int32"),
        "names": ["ann", "bob", "cy"],
        "title": "Quarterly report",
        "json": json,  # a module
        "_": 3, "_i2": "x = 1", "__builtins__": {},
        "In": [], "Out": {}, "get_ipython": lambda: None, "exit": None,
    }
    text = await list_variables.invoke({}, ToolContext(namespace=namespace))
    lines = text.splitlines()
    assert [line.split(":")[0] for line in lines] == ["grid", "names", "sales", "title"]
    assert lines[0].startswith("grid: numpy.ndarray, shape 3×4, dtype int32 = array([[0, 0")
    assert lines[1] == "names: list, len 3 = ['ann', 'bob', 'cy']"
    # pandas 3 calls string columns `str`, older ones `object`.
    region = str(namespace["sales"].dtypes["region"])
    assert lines[2] == ("sales: pandas.DataFrame, shape 2×2, "
                        f"columns {{region: {region}, amount: float64}}")
    assert lines[3] == "title: str, len 16 = 'Quarterly report'"


def test_output_is_bounded_and_filterable() -> None:
    namespace = {f"v{n:04d}": "x" * 10_000 for n in range(MAX_VARIABLES + 50)}
    text = describe_variables(namespace)
    assert len(text.splitlines()) == MAX_VARIABLES + 1
    assert text.endswith("... and 50 more (ask with a pattern)")
    assert max(len(line) for line in text.splitlines()) < 200
    assert describe_variables(namespace, "V0001").splitlines()[0].startswith("v0001: str")
    assert describe_variables({}) == "The notebook has no variables yet."


def test_a_name_or_column_with_a_line_break_cannot_add_a_variable_line() -> None:
    # A name set through globals() and a column label hold line breaks, each followed by
    # what would read as another variable's line.
    forged = "b: int = 1"
    namespace = {"a\n" + forged: 5, "c\u2028" + forged: 6,
                 "frame": pd.DataFrame({"x\r\n" + forged: [1], "y\x85" + forged: [2]})}
    text = describe_variables(namespace)
    lines = text.splitlines()
    assert len(lines) == 3, text
    assert [line for line in lines if line.startswith("b:")] == []
    assert lines[0] == "a\\nb: int = 1: int = 5"
    assert "columns {x\\r\\nb: int = 1: int64, y\\x85b: int = 1: int64}" in lines[2]


def test_a_broken_object_does_not_break_the_listing() -> None:
    class Hostile:
        @property
        def shape(self) -> tuple[int, ...]:
            raise RuntimeError("no")

        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    assert describe_variables({"h": Hostile()}).startswith("h: ")


def test_off_by_default_and_enabled_per_agent() -> None:
    catalog = ToolCatalog.default()
    assert "list_variables" not in resolve_tools(catalog, AgentToolConfig()).names
    assert "list_variables" in resolve_tools(
        catalog, AgentToolConfig(enabled=["list_variables"])).names


class _LenRaises(list):  # type: ignore[type-arg]
    def __len__(self) -> int:
        raise RuntimeError("no length today")


class _ManyDimensions:
    shape = (1,) * 100_000


def test_an_object_that_raises_or_is_huge_costs_only_its_own_line() -> None:
    wide = pd.DataFrame({"c" * 5_000 + str(n): [0] for n in range(3)})
    text = describe_variables({"broken": _LenRaises([1]), "cube": _ManyDimensions(),
                               "fine": 3, "wide": wide})
    lines = text.splitlines()
    assert lines[0] == "broken: tests._LenRaises, len 1"  # the list's length, not its __len__
    assert lines[1].startswith("cube: ") and "shape 1×1×1" in lines[1]
    assert lines[2] == "fine: int = 3"
    assert lines[3].startswith("wide: pandas.DataFrame, shape 1×3, columns {ccc")
    assert all(len(line) <= 600 for line in lines)


class _Quits:
    """Its every fact ends the interpreter, or tries to."""

    def __getattr__(self, name: str) -> NoReturn:
        raise SystemExit(f"no {name}")

    @property
    def shape(self) -> NoReturn:
        raise GeneratorExit

    def __len__(self) -> NoReturn:
        raise SystemExit(1)

    def __repr__(self) -> str:
        raise SystemExit(2)


def test_system_exit_from_an_object_costs_only_the_fact_it_was_computing() -> None:
    # A trusted class (the mock library's) whose properties raise what is no Exception.
    library_object = NonCallableMock(spec=[])
    type(library_object).shape = PropertyMock(side_effect=SystemExit(3))
    type(library_object).dtype = PropertyMock(side_effect=GeneratorExit)
    lines = describe_variables({"quits": _Quits(), "library": library_object,
                                "fine": [1]}).splitlines()
    assert lines[0] == "fine: list, len 1 = [1]"
    assert lines[1].startswith("library: unittest.NonCallableMock = <NonCallableMock id=")
    assert lines[2] == "quits: tests._Quits"


def test_the_users_interrupt_still_stops_the_listing() -> None:
    library_object = NonCallableMock(spec=[])
    type(library_object).shape = PropertyMock(side_effect=KeyboardInterrupt)
    with pytest.raises(KeyboardInterrupt):
        describe_variables({"library": library_object})


def _describe_within(seconds: float, namespace: dict[str, Any]) -> str:
    """describe_variables(namespace), failing the test if it takes longer than
    ``seconds`` (its thread is then left waiting for the test to release it)."""
    text: list[str] = []
    worker = threading.Thread(target=lambda: text.append(describe_variables(namespace)),
                              daemon=True)
    worker.start()
    worker.join(seconds)
    assert text, f"describing the variables took more than {seconds} s"
    return text[0]


def test_an_object_whose_repr_or_len_hangs_does_not_hang_the_listing() -> None:
    release = threading.Event()

    class Stuck:
        def __repr__(self) -> str:
            release.wait()
            return "late"

    class StuckList(list):  # type: ignore[type-arg]
        def __len__(self) -> int:
            release.wait()
            return 0

    in_a_cell = type("Cell", (), {"__module__": "__main__", "__repr__": Stuck.__repr__})
    strings = pd.Series(["a", "b"])
    try:
        text = _describe_within(10, {
            "stuck": Stuck(), "cell": in_a_cell(), "stuck_list": StuckList([1, 2]),
            "in_a_list": [1, Stuck()], "in_a_dict": {"key": Stuck(), Stuck(): 2},
            "ordered": collections.OrderedDict(key=Stuck()),
            "objects": np.array([Stuck(), 1], dtype=object),
            "series": pd.Series([Stuck()]), "strings": strings})
    finally:
        release.set()
    lines = dict(line.split(": ", 1) for line in text.splitlines())
    assert lines["stuck"] == "tests.Stuck" and lines["cell"] == "__main__.Cell"
    assert lines["stuck_list"] == "tests.StuckList, len 2"
    assert lines["in_a_list"] == "list, len 2 = [1, <tests.Stuck>]"
    assert lines["in_a_dict"] == "dict, len 2 = {'key': <tests.Stuck>, <tests.Stuck>: 2}"
    assert lines["ordered"] == ("collections.OrderedDict, len 1 = "
                                "OrderedDict({'key': <tests.Stuck>})")
    assert lines["objects"] == "numpy.ndarray, shape 2, dtype object"
    assert lines["series"] == "pandas.Series, shape 1, dtype object"
    if str(strings.dtype) == "str":  # pandas 3: strings are no Python objects any more
        assert lines["strings"] == "pandas.Series, shape 2, dtype str = 0 a 1 b dtype: str"


# --- objects that forward to notebook code -------------------------------------------------

def test_a_proxy_to_a_notebook_object_runs_none_of_its_code() -> None:
    ran: list[str] = []

    class Thing:  # defined here, like a class of the notebook's own
        @property
        def shape(self) -> tuple[int, int]:
            ran.append("shape")
            return (1, 2)

        def __getattr__(self, name: str) -> Any:
            ran.append(name)
            raise AttributeError(name)

    thing = Thing()
    describe_variables({"p": weakref.proxy(thing)})
    assert ran == []
