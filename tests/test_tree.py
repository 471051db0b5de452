"""The nine debugger actions on the state tree: laws that must hold on any execution.

The executions come from the corpus generator (generated functions with loops, branches, helper
calls, recursion, raised and caught exceptions), recorded once per test session.
"""

from __future__ import annotations

import functools

from hypothesis import given, settings
from hypothesis import strategies as st

from neural_dap.core.actions import Action
from neural_dap.corpus.programs import generate
from neural_dap.trace.recorder import Limits, Program, record
from neural_dap.trace.tree import StateTree

POOL_SIZE = 40


@functools.cache
def tree_for(seed: int) -> StateTree:
    program = generate(seed)
    rec = record(
        Program(f"/gen/{seed}.py", source=program.source, entry=program.entry, entry_args=program.args),
        Limits(max_events=3000),
    )
    return StateTree(list(rec.states))


programs = st.integers(0, POOL_SIZE - 1)


@st.composite
def positions(draw):
    tree = tree_for(draw(programs))
    return tree, draw(st.integers(0, tree.last))


def _parent(tree: StateTree, i: int) -> int | None:
    return tree.parent.get(tree.states[i].invocation)


@settings(max_examples=300, deadline=None)
@given(positions())
def test_inv_step_into_undoes_step_into_and_back(pos):
    tree, i = pos
    if i < tree.last:
        assert tree.apply(tree.apply(i, Action("step_into")), Action("inv_step_into")) == i
    if i > 0:
        assert tree.apply(tree.apply(i, Action("inv_step_into")), Action("step_into")) == i


@settings(max_examples=300, deadline=None)
@given(positions())
def test_step_over_never_lands_deeper_and_stays_in_its_invocation(pos):
    tree, i = pos
    j = tree.apply(i, Action("step_over"))
    s, t = tree.states[i], tree.states[j]
    assert t.depth <= s.depth
    owner = _parent(tree, i) if s.terminal else s.invocation
    later = [k for k in range(i + 1, len(tree)) if tree.states[k].invocation == owner]
    assert j == (later[0] if later else tree.last)
    if later and not s.terminal:
        assert tree.apply(j, Action("inv_step_over")) == i


@settings(max_examples=300, deadline=None)
@given(positions())
def test_inv_step_over_mirrors_step_over(pos):
    tree, i = pos
    j = tree.apply(i, Action("inv_step_over"))
    s, t = tree.states[i], tree.states[j]
    owner = _parent(tree, i) if s.event == "call" else s.invocation
    earlier = [k for k in range(i) if tree.states[k].invocation == owner]
    assert j == (earlier[-1] if earlier else 0)
    assert t.invocation == owner or not earlier
    if earlier and s.event != "call":
        assert tree.apply(j, Action("step_over")) == i


@settings(max_examples=300, deadline=None)
@given(positions())
def test_step_return_lands_on_the_invocations_end_and_inv_step_return_on_its_call(pos):
    tree, i = pos
    s = tree.states[i]
    back = tree.apply(i, Action("inv_step_return"))
    assert tree.states[back].event == "call" and back <= i
    owner = _parent(tree, i) if s.event == "call" else s.invocation
    if owner is not None:
        assert tree.states[back].invocation == owner
    forward = tree.apply(i, Action("step_return"))
    assert forward >= i
    owner = _parent(tree, i) if s.terminal else s.invocation
    if owner is not None and owner in tree.end_index:
        assert tree.states[forward].terminal and tree.states[forward].invocation == owner


@settings(max_examples=300, deadline=None)
@given(positions(), st.data())
def test_breakpoints_land_only_on_listed_lines_or_the_ends(pos, data):
    tree, i = pos
    lines = data.draw(st.lists(st.sampled_from(sorted({s.line for s in tree.states})), min_size=1, max_size=3))
    action = Action.at_lines("breakpoint", lines)
    j = tree.apply(i, action)
    hits = [k for k in range(i + 1, len(tree)) if tree.states[k].event == "line" and tree.states[k].line in lines]
    assert j == (hits[0] if hits else tree.last)
    j = tree.apply(i, Action.at_lines("inv_breakpoint", lines))
    hits = [k for k in range(i) if tree.states[k].event == "line" and tree.states[k].line in lines]
    assert j == (hits[-1] if hits else 0)


@settings(max_examples=100, deadline=None)
@given(positions())
def test_continue_runs_to_the_end(pos):
    tree, i = pos
    assert tree.apply(i, Action("continue")) == tree.last


def test_the_pool_has_calls_loops_and_exceptions():
    states = [s for seed in range(POOL_SIZE) for s in tree_for(seed).states]
    assert any(s.depth > 0 for s in states)
    assert any(s.event == "exception" for s in states) or any(s.caught for s in states)
    assert sum(1 for s in states if s.event == "line") > 300


@settings(max_examples=200, deadline=None)
@given(positions(), st.data())
def test_a_breakpoint_is_a_file_and_a_line(pos, data):
    tree, i = pos
    lines = data.draw(st.lists(st.sampled_from(sorted({s.line for s in tree.states})), min_size=1, max_size=3))
    path = tree.states[0].path
    for kind in ("breakpoint", "inv_breakpoint"):
        anywhere = tree.apply(i, Action.at_lines(kind, lines))
        assert tree.apply(i, Action.at_lines(kind, lines, path)) == anywhere  # its own file: the same stops
        elsewhere = tree.apply(i, Action.at_lines(kind, lines, "/another/file.py"))
        assert elsewhere == (tree.last if kind == "breakpoint" else 0)  # another file's lines: no stop


@settings(max_examples=100, deadline=None)
@given(programs)
def test_a_hit_number_counts_the_runs_of_a_line_up_to_its_event(seed):
    tree = tree_for(seed)
    seen: dict[tuple[str, int], int] = {}
    for k, s in enumerate(tree.states):
        if s.event != "line":
            assert tree.semantics.hit_number(k) is None
            continue
        seen[(s.path, s.line)] = seen.get((s.path, s.line), 0) + 1
        assert tree.semantics.hit_number(k) == seen[(s.path, s.line)]
        assert tree.semantics.nth_hit((s.path, s.line), seen[(s.path, s.line)]) == k


@settings(max_examples=60, deadline=None)
@given(programs, st.data())
def test_a_tree_grown_in_steps_answers_as_one_built_at_once(seed, data):
    """A live recording of threads grows its tree at each stop (StateTree.extend) rather than
    building it again: every action from every state must land where the whole tree's does."""
    whole = tree_for(seed)
    states = whole.states
    cuts = sorted(set(data.draw(st.lists(st.integers(1, len(states) - 1), max_size=3))))
    grown = StateTree(states[: cuts[0]] if cuts else states)
    for a, b in zip(cuts, [*cuts[1:], len(states)], strict=False):
        grown.extend(states[a:b], {}, ())
    assert len(grown) == len(whole)
    kinds = ("step_into", "step_over", "step_return", "inv_step_into", "inv_step_over", "inv_step_return")
    for i in range(len(states)):
        for kind in kinds:
            assert grown.apply(i, Action(kind)) == whole.apply(i, Action(kind)), (i, kind)
        assert grown.stack(i) == whole.stack(i)
