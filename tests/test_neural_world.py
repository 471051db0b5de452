"""The neural world model with scripted completions: prompts, parsing, validation, voting, lookups."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from neural_dap.core.actions import Action
from neural_dap.core.world import Entry, LaunchSpec, WorldError
from neural_dap.trace.recorder import Program, record
from neural_dap.trace.tree import StateTree
from neural_dap.world.neural import ModelSettings, NeuralWorld
from neural_dap.world.reconciled import ReconciledWorld

from .fakes import ScriptedClient, frame_text

SOURCE = textwrap.dedent(
    """\
    def double(v):
        return v * 2

    def f(xs):
        total = 0
        for x in xs:
            total += double(x)
        return total
    """
)


@pytest.fixture()
def program(tmp_path: Path) -> str:
    path = tmp_path / "prog.py"
    path.write_text(SOURCE)
    return str(path)


def truth(program: str):
    rec = record(Program(program, entry="f", entry_args="[1, 2]"))
    return StateTree(list(rec.states))


def oracle(tree: StateTree, plan: list[Action]) -> list[str]:
    """The completions a perfect model would write for `plan`, from the real execution."""
    i, out = 0, []
    for action in plan:
        i = tree.apply(i, action)
        out.append([frame_text(tree.states[i])])
    return out


def launch(program: str) -> LaunchSpec:
    return LaunchSpec(program=program, entry=Entry("f", "[1, 2]"))


async def test_a_stepping_session_with_a_perfect_model_lands_on_the_real_states(program):
    tree = truth(program)
    plan = [
        Action("step_into"),
        Action("step_over"),
        Action("step_into"),
        Action("step_into"),
        Action("step_return"),
        Action.at_lines("breakpoint", [7]),
        Action("continue"),
    ]
    client = ScriptedClient(oracle(tree, plan))
    world = NeuralWorld(client, ModelSettings(dialect="nd"))
    stop = await world.start(launch(program))
    assert stop.state.event == "call" and stop.state.locals == {"xs": "[1, 2]"}
    i = 0
    for action in plan:
        i = tree.apply(i, action)
        stop = await world.act(action)
        real = tree.states[i]
        assert (stop.state.event, stop.state.line, stop.state.locals if real.event != "return" else {}) == (
            real.event,
            real.line,
            dict(real.locals) if real.event != "return" else {},
        ), str(action)
        assert stop.predicted
    assert stop.at_end and stop.exit.code == 0 and stop.state.value == "6"
    # the prompts carry the actions and grow only at the end (what a prefix cache needs)
    assert "<|breakpoint|>7<|arg_sep|>" in client.prompts[5]
    for a, b in zip(client.prompts, client.prompts[1:], strict=False):
        assert b.startswith(a.rsplit("<|frame_sep|>", 1)[0])
    # a state inside double() has f below it on the stack, at the line that called double
    inside = next(k for k, s in enumerate(tree.states) if s.function == "double" and s.event == "line")
    world = NeuralWorld(ScriptedClient(oracle(tree, [Action("step_into")] * inside)), ModelSettings())
    await world.start(launch(program))
    for _ in range(inside):
        stop = await world.act(Action("step_into"))
    assert [(f.function, f.line) for f in stop.stack] == [("double", 2), ("f", 7)]
    assert stop.stack[1].locals["x"] == "1"


async def test_stepping_back_over_known_states_is_a_lookup_without_a_model_call(program):
    tree = truth(program)
    plan = [Action("step_into")] * 6
    client = ScriptedClient(oracle(tree, plan))
    world = NeuralWorld(client, ModelSettings())
    await world.start(launch(program))
    for action in plan:
        await world.act(action)
    calls = len(client.prompts)
    back = await world.act(Action("inv_step_into"))
    assert back.state.line == tree.states[5].line
    back = await world.act(Action("inv_step_over"))
    assert (back.state.line, back.state.locals) == (tree.states[4].line, dict(tree.states[4].locals))
    again = await world.act(Action("step_into"))
    assert again.state.line == tree.states[5].line
    assert len(client.prompts) == calls
    assert world.summary()["lookups"] == 3


async def test_an_invalid_frame_is_retried_then_a_clear_error_and_the_world_stays_usable(program):
    tree = truth(program)
    good = frame_text(tree.states[1])
    client = ScriptedClient([["nonsense"], ['<|line_sep|>{"xs": "[1, 2]"}<|action_sep|>    not a line\n'], [good]])
    world = NeuralWorld(client, ModelSettings(retries=2))
    await world.start(launch(program))
    stop = await world.act(Action("step_into"))
    assert stop.state.line == 5 and world.invalid_frames == 2
    client.script = [["garbage"]] * 3
    with pytest.raises(WorldError, match="not a valid frame after 3 attempts"):
        await world.act(Action("step_into"))
    assert world.timeline[world.pos].line == 5  # nothing changed
    client.script = [[frame_text(tree.states[2])]]
    assert (await world.act(Action("step_into"))).state.line == 6


async def test_without_a_constraint_a_misspelt_source_line_is_read_as_the_closest_program_line_and_counted(program):
    tree = truth(program)
    misspelt = frame_text(tree.states[1]).replace("total = 0", "total = 00")
    client = ScriptedClient([[misspelt]])
    world = NeuralWorld(client, ModelSettings(constrained=False))
    await world.start(launch(program))
    stop = await world.act(Action("step_into"))
    assert stop.state.line == 5 and stop.state.source.strip() == "total = 0"
    assert world.summary()["repairedLines"] == 1 and world.invalid_frames == 0


async def test_several_samples_vote_and_impossible_frames_are_rejected(program):
    tree = truth(program)
    right = frame_text(tree.states[1])
    wrong = right.replace('"[1, 2]"', '"[9]"')
    impossible = '<|line_sep|>{"xs": "[1, 2]"}<|action_sep|>def double(v):\n'  # a def line cannot be a line event there
    client = ScriptedClient([[right, wrong, right, impossible, wrong]])
    world = NeuralWorld(client, ModelSettings(samples=5, temperature=0.8))
    await world.start(launch(program))
    stop = await world.act(Action("step_into"))
    assert stop.state.locals == {"xs": "[1, 2]"}
    assert world.summary()["meanAgreement"] == 0.5
    with pytest.raises(WorldError, match="not a frame the program allows after step_return"):
        client.script = [[frame_text(tree.states[3])]] * 3
        await world.act(Action("step_return"))


async def test_the_cwm_dialect_forces_event_tokens_and_runs_steps_for_jumps(program):
    tree = truth(program)
    # step_into from the call forces <|line_sep|>; a continue is a run of single steps
    answers = [[frame_text(tree.states[1]).replace("<|line_sep|>", "", 1)]] + [[frame_text(s)] for s in tree.states[2:]]
    client = ScriptedClient(answers)
    world = NeuralWorld(client, ModelSettings(dialect="cwm"))
    await world.start(launch(program))
    stop = await world.act(Action("step_into"))
    assert client.prompts[0].endswith("<|frame_sep|><|line_sep|>") and stop.state.line == 5
    stop = await world.act(Action("continue"))
    assert stop.at_end and len(client.prompts) == len(tree.states) - 1
    assert "<|step_into|>" not in client.prompts[-1]  # cwm prompts have no action tokens
    back = await world.act(Action("inv_step_over"))
    assert back.state.line == tree.states[tree.apply(tree.last, Action("inv_step_over"))].line


async def test_a_model_without_the_nd_tokens_is_told_to_use_cwm(program):
    client = ScriptedClient([])
    client.ids = {k: v for k, v in client.ids.items() if "step" not in k and "break" not in k and "continue" not in k}
    with pytest.raises(WorldError, match="needs dialect 'cwm'"):
        await NeuralWorld(client, ModelSettings(dialect="nd")).start(launch(program))


async def test_code_that_cannot_run_is_still_predicted(tmp_path):
    path = tmp_path / "snippet.py"
    path.write_text("from nowhere import thing\n\ndef g(a, b=2, *rest, key=None):\n    return thing(a)\n")
    client = ScriptedClient([])
    world = NeuralWorld(client, ModelSettings())
    stop = await world.start(LaunchSpec(program=str(path), entry=Entry("g", "1, 3, 4, key='k'")))
    assert stop.state.locals == {"a": "1", "b": "3", "rest": "(4,)", "key": "'k'"}
    stop = await world.start(LaunchSpec(program=str(path), entry=Entry("g", returns="[1, 2]")))
    assert (stop.state.event, stop.state.line, stop.state.value) == ("return", 4, "[1, 2]")


async def test_reconciling_with_the_recorded_run_flags_and_can_snap_to_reality(program):
    tree = truth(program)
    wrong = frame_text(tree.states[2]).replace('"total": "0"', '"total": "5"')
    for trust in ("model", "reality"):
        client = ScriptedClient([[frame_text(tree.states[1])], [wrong], [frame_text(tree.states[3])]])
        world = ReconciledWorld(NeuralWorld(client, ModelSettings()), "recorded", trust)
        await world.start(launch(program))
        ok = await world.act(Action("step_into"))
        assert not ok.divergences
        flagged = await world.act(Action("step_into"))
        assert [(d.kind, d.name, d.predicted, d.actual) for d in flagged.divergences] == [("local", "total", "5", "0")]
        assert "total" in flagged.note
        assert flagged.state.locals["total"] == ("5" if trust == "model" else "0")
        summary = world.summary()
        assert summary["divergences"] == 1 and summary["statesCompared"] == 3
        assert summary["snappedToReality"] == (1 if trust == "reality" else 0)
        await world.act(Action("step_into"))
        next_prompt_tail = client.prompts[-1][-200:]
        assert ('"total": "5"' in next_prompt_tail) == (trust == "model")


async def test_a_breakpoint_in_another_file_never_stops_at_that_line_of_the_predicted_file(program, tmp_path):
    """The model predicts one file: `b other.py:7` must not stop at line 7 of prog.py (issue 36),
    going forward or back, as a target or among the breakpoints a step passes."""
    other = str(tmp_path / "other.py")
    tree = truth(program)
    # what the world asks the model: a breakpoint in another file is a continue to the end here
    client = ScriptedClient(oracle(tree, [Action("continue")]))
    world = NeuralWorld(client, ModelSettings(dialect="nd"))
    await world.start(launch(program))
    stop = await world.act(Action.at_lines("breakpoint", [7], path=other))
    assert stop.at_end and not stop.hit_breakpoint
    assert "<|breakpoint|>" not in client.prompts[-1].rsplit("<|frame_sep|>", 1)[-1]
    # back from the end: no stop at prog.py:7 either (known states answer, no model call)
    asked = len(client.prompts)
    stop = await world.act(Action.at_lines("inv_breakpoint", [7], path=other))
    assert (stop.state.event, stop.state.line) == ("call", 4) and len(client.prompts) == asked
    # the same line of the predicted file stops there, however its path is spelt
    client = ScriptedClient(oracle(tree, [Action.at_lines("breakpoint", [7])]))
    world = NeuralWorld(client, ModelSettings(dialect="nd"))
    await world.start(launch(program))
    spelt = str(Path(program).parent / "." / Path(program).name)
    stop = await world.act(Action.at_lines("breakpoint", [7], path=spelt))
    assert (stop.state.line, stop.hit_breakpoint) == (7, True)
    # a step over a line with another file's breakpoint on it is not a breakpoint stop
    client = ScriptedClient(oracle(tree, [Action("step_into"), Action("step_over")]))
    world = NeuralWorld(client, ModelSettings(dialect="nd"))
    await world.start(launch(program))
    await world.act(Action("step_into"))
    stop = await world.act(Action("step_over"), breakpoints=((other, 6),))
    assert stop.state.line == 6 and not stop.hit_breakpoint


async def test_a_log_point_on_the_line_a_step_lands_on_logs_and_the_stop_is_a_step(program):
    """The debugger's rules decide a breakpoint on the landing line in the neural world as in the
    recorded one: a log point there writes its text and the stop's reason stays `step` (issue 36)."""
    from dataclasses import dataclass

    from neural_dap.debugger.core import Debugger

    @dataclass(frozen=True)
    class Line:
        line: int
        condition: str | None = None
        hit_condition: str | None = None
        log_message: str | None = None

    tree = truth(program)
    for spec, logged in (
        (Line(6, log_message="total is {total}"), [("console", "total is 0\n")]),
        (Line(6, condition="total > 100"), []),  # a condition that is false there: no breakpoint stop
    ):
        client = ScriptedClient(oracle(tree, [Action("step_into"), Action("step_over")]))
        debugger = Debugger(lambda _launch, client=client: NeuralWorld(client, ModelSettings(dialect="nd")))
        await debugger.start(launch(program))
        try:
            debugger.breakpoints.set_lines(program, [spec], SOURCE)
            debugger.stop_on_entry = True
            entry = await debugger.first_stop()  # f's first line: total = 0
            assert (entry.reason, entry.stop.state.line) == ("entry", 5)
            report = await debugger.execute("next")  # lands on line 6, where the breakpoint is
            assert (report.reason, report.stop.state.line) == ("step", 6)
            assert [o for o in report.output if o[0] == "console"] == logged
        finally:
            await debugger.close()
