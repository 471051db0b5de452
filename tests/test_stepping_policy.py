"""The stepping policy (debugger/stepping.py) on its own: DAP requests become world actions so stops land
where debugpy's do. Driven over a real recorded execution, without any DAP."""

from __future__ import annotations

import textwrap

import pytest

from neural_dap.core.actions import Action
from neural_dap.core.state import Frame, State
from neural_dap.core.world import Stop
from neural_dap.debugger.stepping import UnknownExecution, drive
from neural_dap.trace.recorder import Program, record
from neural_dap.trace.tree import StateTree

SOURCE = textwrap.dedent(
    """\
    def square(x):
        y = x * x
        return y

    def main():
        total = 0
        for i in range(2):
            total += square(i)
        return total
    """
)


class TreeWorld:
    """A minimal world over a StateTree: what the policy's `act` needs."""

    def __init__(self, tree: StateTree) -> None:
        self.tree = tree
        self.index = 0
        self.actions: list[str] = []

    def stop(self, i: int, hit: bool = False) -> Stop:
        state = self.tree.states[i]
        stack = tuple(Frame(self.tree.states[k].function, self.tree.states[k].line, "", 0) for k in self.tree.stack(i))
        return Stop(state=state, stack=stack, index=i, at_start=i == 0, at_end=i == self.tree.last, hit_breakpoint=hit)

    async def act(self, action: Action, interrupt: bool) -> Stop:
        self.actions.append(str(action))
        self.index = self.tree.apply(self.index, action)
        state = self.tree.states[self.index]
        hit = action.kind == "breakpoint" and state.event == "line" and state.line in action.lines
        return self.stop(self.index, hit)


@pytest.fixture()
def world(tmp_path) -> TreeWorld:
    path = tmp_path / "prog.py"
    path.write_text(SOURCE)
    return TreeWorld(StateTree(list(record(Program(str(path), entry="main")).states)))


def at(world: TreeWorld, function: str, line: int, event: str = "line", nth: int = 0) -> Stop:
    found = [k for k, s in enumerate(world.tree.states) if (s.function, s.line, s.event) == (function, line, event)]
    world.index = found[nth]
    return world.stop(found[nth])


async def test_step_in_on_a_call_line_stops_on_the_callees_first_line(world):
    outcome = await drive("stepIn", at(world, "main", 8), world.act, ())
    assert (outcome.stop.state.function, outcome.stop.state.line, outcome.reason) == ("square", 2, "step")
    assert world.actions == ["step_into", "step_into"]  # through the call event, as debugpy does


async def test_next_at_a_return_goes_on_into_the_callers_next_line(world):
    outcome = await drive("next", at(world, "square", 3), world.act, ())
    assert (outcome.stop.state.function, outcome.stop.state.line) == ("main", 7)
    # the return, then on as pydevd does on 3.11 once the stepped frame returned: into the caller
    assert world.actions == ["step_over", "step_into"]


async def test_next_off_a_return_stops_in_the_next_user_function_the_callers_line_calls(tmp_path):
    """`x = f(1) + g(2)`, `next` at f's return: debugpy (3.11) stops in g, not at the next line."""
    path = tmp_path / "fg.py"
    path.write_text("def f(a):\n    return a + 1\n\n\ndef g(b):\n    return b * 2\n\n\nx = f(1) + g(2)\nprint(x)\n")
    world = TreeWorld(StateTree(list(record(Program(str(path))).states)))
    outcome = await drive("next", at(world, "f", 2), world.act, ())
    assert (outcome.stop.state.function, outcome.stop.state.line) == ("g", 6)


async def test_step_out_shows_the_return_in_the_caller(world):
    outcome = await drive("stepOut", at(world, "square", 2), world.act, ())
    assert outcome.stop.state.event == "return" and outcome.stop.stack[1].function == "main"


async def test_step_back_out_from_a_functions_first_stop_lands_on_the_call_site(world):
    # Step Back Into lands on square's call state; Step Back Out from there goes to the line that called it
    call = at(world, "square", 1, event="call", nth=1)
    outcome = await drive("stepBackOut", call, world.act, ())
    assert (outcome.stop.state.function, outcome.stop.state.line) == ("main", 8)
    assert world.actions == ["inv_step_over"]
    # and from inside, as before: to the call, then to the call site
    world.actions.clear()
    outcome = await drive("stepBackOut", at(world, "square", 2, nth=1), world.act, ())
    assert (outcome.stop.state.function, outcome.stop.state.line) == ("main", 8)
    assert world.actions == ["inv_step_return", "inv_step_over"]


async def test_step_back_over_a_call_lands_in_the_caller(world):
    outcome = await drive("stepBack", at(world, "main", 7, nth=1), world.act, ())
    assert (outcome.stop.state.function, outcome.stop.state.line) == ("main", 8)


async def test_reverse_continue_to_the_start_says_entry_and_continue_to_the_end_says_end(world):
    back = await drive("reverseContinue", at(world, "main", 9), world.act, ())
    assert back.reason == "entry" and back.stop.at_start
    end = await drive("continue", back.stop, world.act, ())
    assert end.reason == "end" and not end.finished
    finished = await drive("continue", back.stop, world.act, (), stop_at_end=False)
    assert finished.finished


async def test_continue_to_a_breakpoint_and_goto(world):
    hit = await drive("continue", at(world, "main", 6), world.act, (("", 3),))
    assert hit.reason == "breakpoint" and (hit.stop.state.function, hit.stop.state.line) == ("square", 3)
    jump = await drive("goto", hit.stop, world.act, (), line=6)
    assert jump.reason == "goto" and jump.stop.state.line == 6


async def test_an_unknown_request_is_refused():
    with pytest.raises(UnknownExecution):
        await drive("fly", None, None, ())  # type: ignore[arg-type]


async def test_goto_searches_backwards_when_the_line_ahead_is_another_files():
    """Forward, the goto ends at the end of the run, which happens to be the same line number in
    another file: that is not the target, so its last run before is looked for."""

    def stop_at(path: str, line: int, **flags: bool) -> Stop:
        state = State("line", line, "", "f", 0, 1, path=path)
        return Stop(state=state, stack=(Frame("f", line, "", 1, path),), **flags)

    landed = {
        "breakpoint": stop_at("/other.py", 5, at_end=True),
        "inv_breakpoint": stop_at("/target.py", 5, hit_breakpoint=True),
    }
    actions: list[Action] = []

    async def act(action: Action, interrupt: bool) -> Stop:
        actions.append(action)
        return landed[action.kind]

    outcome = await drive("goto", stop_at("/target.py", 9), act, (), line=5, path="/target.py")
    assert [a.kind for a in actions] == ["breakpoint", "inv_breakpoint"]
    assert actions[1].targets == (("/target.py", 5),)
    assert (outcome.stop.state.path, outcome.stop.state.line, outcome.reason) == ("/target.py", 5, "goto")

    actions.clear()
    landed["breakpoint"] = stop_at("/target.py", 5, hit_breakpoint=True)
    outcome = await drive("goto", stop_at("/target.py", 9), act, (), line=5, path="/target.py")
    assert [a.kind for a in actions] == ["breakpoint"]  # found ahead, in its own file: no search back
    assert outcome.stop.state.path == "/target.py"
