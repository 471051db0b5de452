"""Repr text as data (core/reprs.py) and the expression evaluator (core/evaluator.py)."""

from __future__ import annotations

import collections
import math
import sys
from pathlib import Path

import pytest

from neural_dap.core.evaluator import Budget, EvaluationError, evaluate
from neural_dap.core.reprs import ObjectRepr, Opaque, bounded_repr, children, has_children, parse_repr, show, type_name
from neural_dap.core.state import TRUNCATION_MARK
from neural_dap.debugger.shown import shown


@pytest.mark.parametrize(
    "text, value",
    [
        ("[1, 'a', None]", [1, "a", None]),
        ("{'k': (1, 2.5)}", {"k": (1, 2.5)}),
        ("set()", set()),
        ("frozenset({1, 2})", frozenset({1, 2})),
        ("-3", -3),
        ("1+2j", 1 + 2j),
        ("b'\\x00a'", b"\x00a"),
        ("bytearray(b'ab')", bytearray(b"ab")),
        ("(1,)", (1,)),
    ],
)
def test_literal_reprs_parse_to_their_values(text, value):
    assert parse_repr(text) == value


def test_object_reprs_keep_their_shape_and_the_rest_stays_text():
    point = parse_repr("Point(x=1, y=[2, 3])")
    assert isinstance(point, ObjectRepr) and point.name == "Point" and point.attribute("y") == [2, 3]
    assert type_name(point) == "Point" and show(point) == "Point(x=1, y=[2, 3])"
    assert children(point) == [("x", 1), ("y", [2, 3])] and has_children(point)
    assert parse_repr("collections.Counter({'a': 2})") == ObjectRepr("collections.Counter", ({"a": 2},))
    opaque = parse_repr("<__main__.Node object>")
    assert isinstance(opaque, Opaque) and type_name(opaque) == "Node"
    assert isinstance(parse_repr("[1, 2" + TRUNCATION_MARK), Opaque)  # a cut repr is text
    assert isinstance(parse_repr("__import__('os').system('x')"), Opaque)  # code-shaped text stays text, never run
    assert math.isinf(parse_repr("inf"))


def test_a_repr_never_builds_what_it_names():
    assert isinstance(parse_repr("bytearray(10**9)"), Opaque)  # arithmetic is not a literal
    assert isinstance(parse_repr("bytearray(1000000000)"), ObjectRepr)
    assert isinstance(parse_repr("'a' * 10**9"), Opaque)


def test_values_are_written_back_within_a_bound():
    shared = [[0] * 1000] * 1000
    text = bounded_repr(shared, limit=500)
    assert len(text) == 501 and text.endswith(TRUNCATION_MARK)
    assert bounded_repr({"a": (1,)}) == repr({"a": (1,)})
    assert show(Opaque("<x>")) == "<x>"


@pytest.mark.parametrize(
    "expression, expected",
    [
        ("xs[0] + len(s)", 1 + 5),
        ("sorted(d.keys())", ["a", "b"]),
        ("[x * 2 for x in xs if x > 1]", [4, 6]),
        ("s.upper().center(9, '*')", "**HELLO**"),
        ("f'{n}-{s!r}'", "3-'hello'"),
        ("sum(xs) // 2 if xs else 0", 3),
        ("p.y[1]", 3),
        ("{k: v for k, v in d.items()}", {"a": 1, "b": 2}),
        ("'xs' in dir() and 'gone' not in dir()", True),  # (what a watch guards a name with)
    ],
)
def test_expressions_evaluate_over_repr_values(expression, expected):
    names = {"xs": "[1, 2, 3]", "s": "'hello'", "d": "{'b': 2, 'a': 1}", "n": "3", "p": "Point(x=1, y=[2, 3])"}
    assert evaluate(expression, names) == expected


@pytest.mark.parametrize(
    "expression, message",
    [
        ("__import__('os')", "not defined"),
        ("xs.append(4)", "only methods without side effects"),
        ("open('/etc/passwd')", "not defined"),
        ("node.value", "only known as text"),
        ("lambda: 1", "not allowed"),
        ("'x' * 10**9", "elements"),
        ("2 ** 10**6", "too large an integer"),
        ("xs[", "invalid expression"),
        ("1 / 0", "ZeroDivisionError"),
        ("dir(xs)", "dir\\(object\\) is not available here"),
    ],
)
def test_expressions_that_would_act_or_explode_are_evaluation_errors(expression, message):
    with pytest.raises(EvaluationError, match=message):
        evaluate(expression, {"xs": "[1, 2]", "node": "<Node object>"})


def test_the_budget_bounds_steps():
    with pytest.raises(EvaluationError, match="too many steps"):
        evaluate("[i for i in range(50000) for j in range(3)]", {}, Budget(steps=1000))


def _safe_repr():
    """debugpy's own SafeRepr (pydevd, vendored in the debugpy package this project depends on)."""
    import debugpy

    pydevd = str(Path(debugpy.__file__).parent / "_vendored" / "pydevd")
    if pydevd not in sys.path:
        sys.path.append(pydevd)
    from _pydevd_bundle.pydevd_safe_repr import SafeRepr  # type: ignore[import-not-found]

    return SafeRepr()


@pytest.mark.parametrize(
    "value",
    [
        {"a": {"b": {"c": 1}}},
        [[[1, 2], [3]], [[4]]],
        ("-", ("/", ("+", 4, 6), 2), 1),
        ((1,),),
        list(range(59)),
        list(range(60)),
        [list(range(19)), list(range(20))],
        {i: {j: [j] for j in range(21)} for i in range(61)},
        ["x" * 200, b"y" * 129, "it's " * 30, 'say "hi" ' * 20, "q" * 128],
        [10**150, 2.5, None, True, -3],
        [set(), frozenset(), frozenset({1}), {}, [], ()],
        {"k": [set(), {"z": (1, 2)}]},
        [[]],
        [[[]]],
        set(),
        frozenset({(1, (2, (3,)))}),
        collections.OrderedDict(a=1, b=[1, {"c": {"d": 2}}]),
        collections.OrderedDict(),
        [collections.OrderedDict(a="x" * 200)],
        collections.deque([1, [2, [3, [4]]]]),
        collections.deque([1, 2], maxlen=3),
        collections.deque(),
    ],
)
def test_a_containers_value_reads_as_debugpys_saferepr(value):
    """The Variables view shows what debugpy's SafeRepr makes of the value, rebuilt from repr()."""
    expected = _safe_repr()(value)
    assert shown(repr(value), type(value).__name__) == expected
    assert shown(expected, type(value).__name__) == expected  # (a live session's text is SafeRepr's already)


def test_text_that_is_no_literal_container_reads_as_it_is():
    for text, kind in [
        ("[<object at 0x1>, 2]", "list"),
        ("[1, 2\u2026", "list"),
        ("Point(x=1)", "Point"),
        ("{1: 2}", "str"),
    ]:
        assert shown(text, kind) == text
    # (hostile text from a recording: nesting past the parser's depth reads as it is, never longer)
    for deep in ("[" * 100_000 + "]" * 100_000, "(" * 5000 + ")" * 5000):
        assert shown(deep, "list") == deep


def test_an_ordered_dict_reads_as_debugpys_saferepr_in_its_312_repr_too():
    """3.12 writes an OrderedDict's repr as a dict's (`OrderedDict({'a': 1})`); SafeRepr still
    writes its pairs (`OrderedDict([('a', 1)])`), and so does the Variables view."""
    value = collections.OrderedDict(a=1, b={"c": [1, 2]})
    text = "OrderedDict({'a': 1, 'b': {'c': [1, 2]}})"
    assert shown(text, "OrderedDict") == _safe_repr()(value) == "OrderedDict([('a', 1), ('b', {'c': [...]})])"
