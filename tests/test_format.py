"""The trace format: exact rendering, exact render -> parse round trips, safe typed parse errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from neural_dap.core.actions import STEP_INTO, Action
from neural_dap.core.source import SourceInfo
from neural_dap.core.state import as_traced
from neural_dap.format.settrace import as_settrace
from neural_dap.format.tokens import CWM_IDS, FRAME_SEP, Special, to_ids
from neural_dap.format.trace import END_OF_TRACE, FormatError, TraceText, render_trace
from neural_dap.trace.recorder import Program, record
from neural_dap.trace.tree import StateTree

from .conftest import EXAMPLES

DESIGN_EXAMPLE = textwrap.dedent(
    """\
    def add_one(x):
        y = x + 1
        return y

    def main():
        return add_one(3)
    """
)


def record_source(source: str, entry: str, args: str = ""):
    return record(Program("/virtual/prog.py", source=source, entry=entry, entry_args=args))


def test_cwm_rendering_matches_the_design_example_token_for_token():
    rec = record_source(DESIGN_EXAMPLE, "main")
    trace = render_trace(list(rec.states), "cwm", SourceInfo(DESIGN_EXAMPLE))
    expected = (
        "<|begin_of_text|><|trace_context_start|>def add_one(x):\n    y = x + 1\n    return y\n\n"
        "def main():  # << START_OF_TRACE\n    return add_one(3)\n<|frame_sep|>"
        "<|call_sep|>{}<|action_sep|>def main():\n<|frame_sep|>"
        "<|line_sep|>{}<|action_sep|>    return add_one(3)\n<|frame_sep|>"
        '<|call_sep|>{"x": "3"}<|action_sep|>def add_one(x):\n<|frame_sep|>'
        '<|line_sep|>{"x": ".."}<|action_sep|>    y = x + 1\n<|frame_sep|>'
        '<|line_sep|>{"x": "..", "y": "4"}<|action_sep|>    return y\n<|frame_sep|>'
        '<|return_sep|><|action_sep|>    return y\n<|arg_sep|>"4"<|frame_sep|>'
        '<|return_sep|><|action_sep|>    return add_one(3)\n<|arg_sep|>"4"<|frame_sep|>'
    )
    assert trace.text() == expected


def test_token_ids_splice_special_ids_and_encode_only_text():
    rec = record_source(DESIGN_EXAMPLE, "main")
    trace = render_trace(list(rec.states), "cwm", SourceInfo(DESIGN_EXAMPLE))
    seen: list[str] = []

    def encode(text: str) -> list[int]:
        seen.append(text)
        return [ord(c) for c in text]

    ids = to_ids(trace.segments(), encode, CWM_IDS)
    assert ids[:2] == [128000, 128107] and ids.count(128100) == 8
    assert not any("<|" in piece for piece in seen)  # special-token strings never reach the tokenizer


def as_written(states, dialect: str):
    """The recorded states a dialect writes: cwm writes sys.settrace's events (format.settrace); a
    module's frame without the modules it imported (core.state.as_traced) in both."""
    states = [as_traced(s) for s in states]
    return as_settrace(states) if dialect == "cwm" else states


def round_trip(states, dialect: str, source: SourceInfo, actions=None) -> None:
    actions = actions or [STEP_INTO] * len(states)
    rendered = render_trace(states, dialect, source, actions=actions)
    reader = TraceText(dialect, source, rendered.entry_line, entry_function=states[0].function)
    reader.append(states[0])
    for i in range(1, len(states)):
        frame = rendered.frames[i]
        n_action = len(rendered.action_segments(actions[i])) if dialect == "nd" else 0
        completion = "".join(frame[n_action:-1])  # what a model writes: the frame, without the separator
        parsed = reader.parse(completion, actions[i])
        assert parsed is not END_OF_TRACE
        assert parsed.format_view() == rendered.states[i].format_view(), f"frame {i}: {completion!r}"
        reader.append(parsed, actions[i])
    return rendered


@pytest.mark.parametrize("example", sorted(p.name for p in EXAMPLES.glob("*.py") if "missing" not in p.name))
@pytest.mark.parametrize("dialect", ["cwm", "nd"])
def test_render_parse_round_trip_is_exact_on_the_examples(example, dialect):
    path = EXAMPLES / example
    rec = record(Program(str(path)))
    states = as_written(list(rec.states), dialect)
    source = SourceInfo(path.read_text())
    rendered = round_trip(states, dialect, source)
    # the text-level view of every state equals the recorded one
    assert [s.format_view() for s in rendered.states] == [s.format_view() for s in states]


def test_round_trip_in_nd_with_jumps_and_inverse_actions():
    source_text = (EXAMPLES / "recursion.py").read_text()
    rec = record(Program(str(EXAMPLES / "recursion.py"), entry="factorial", entry_args="4"))
    tree = StateTree(list(rec.states))
    plan = [
        Action("step_into"),
        Action("step_over"),
        Action.at_lines("breakpoint", [7]),
        Action("step_into"),
        Action("step_return"),
        Action("inv_step_over"),
        Action("inv_step_into"),
        Action("continue"),
        Action("inv_step_return"),
        Action.at_lines("inv_breakpoint", [6]),
        Action("step_over"),
    ]
    i, states, actions = 0, [tree.states[0]], [None]
    for action in plan:
        i = tree.apply(i, action)
        states.append(tree.states[i])
        actions.append(action)
    rendered = render_trace(states, "nd", SourceInfo(source_text), actions=actions)
    text = rendered.text()
    assert "<|breakpoint|>7<|arg_sep|>" in text and "<|inv_step_return|>" in text
    reader = TraceText("nd", SourceInfo(source_text), rendered.entry_line, entry_function="factorial")
    reader.append(states[0])
    for k in range(1, len(states)):
        completion = "".join(rendered.frames[k][len(rendered.action_segments(actions[k])) : -1])
        parsed = reader.parse(completion, actions[k])
        assert (parsed.event, parsed.line, parsed.locals if parsed.event in ("call", "line") else {}, parsed.value) == (
            states[k].event,
            states[k].line,
            dict(states[k].locals) if states[k].event in ("call", "line") else {},
            states[k].value,
        )
        reader.append(parsed, actions[k])


def test_cruxeval_dev_records_every_function_and_round_trips_in_both_dialects(cruxeval_rows):
    mismatched, failed = [], []
    for row in cruxeval_rows:
        rec = record(Program(f"/cruxeval/{row['id']}.py", source=row["code"], entry="f", entry_args=row["input"]))
        if rec.return_value != row["output"]:
            mismatched.append((row["id"], rec.outcome.describe(), rec.return_value, row["output"]))
            continue
        for dialect in ("cwm", "nd"):
            try:
                round_trip(as_written(list(rec.states), dialect), dialect, SourceInfo(row["code"]))
            except AssertionError as exc:
                failed.append((row["id"], dialect, str(exc)[:200]))
    assert not mismatched, mismatched[:5]
    assert not failed, failed[:5]


@pytest.fixture()
def reader():
    source = SourceInfo(DESIGN_EXAMPLE)
    trace = TraceText("cwm", source, 5, entry_function="main")
    rec = record_source(DESIGN_EXAMPLE, "main")
    for state in list(rec.states)[:3]:  # main's call, its line, add_one's call
        trace.append(state)
    return trace


@pytest.mark.parametrize(
    "completion, words",
    [
        ("", "empty frame"),
        ('{"x": ".."}<|action_sep|>    y = x + 1\n', "must start with an event token"),
        ('<|line_sep|>{"x": 3}<|action_sep|>    y = x + 1\n', "must be a repr string"),
        ('<|line_sep|>{"x": "3"<|action_sep|>    y = x + 1\n', "not valid JSON"),
        ('<|line_sep|>["x"]<|action_sep|>    y = x + 1\n', "must be a JSON object"),
        ('<|line_sep|>{"x": ".."}<|action_sep|>    y = x + 2\n', "is not in the program"),
        ('<|line_sep|>{"z": ".."}<|action_sep|>    y = x + 1\n', "has no earlier value"),
        ('<|line_sep|>{"x": ".."}    y = x + 1\n', "expected <|action_sep|>"),
        ("<|return_sep|><|action_sep|>    return y\n<|arg_sep|>4", "must be a JSON string"),
        ('<|return_sep|><|action_sep|>    return y\n<|arg_sep|>"4"<|arg_sep|>', "unexpected"),
    ],
)
def test_bad_completions_fail_with_a_typed_error_saying_what_and_where(reader, completion, words):
    before = reader.text()
    with pytest.raises(FormatError, match=words) as info:
        reader.parse(completion, STEP_INTO)
    assert info.value.text == completion
    assert reader.text() == before  # a failed parse changes nothing


def test_model_text_is_data_never_evaluated(reader, tmp_path: Path):
    marker = tmp_path / "pwned"
    payload = f"__import__('os').system('touch {marker}')"
    parsed = reader.parse(
        '<|line_sep|>{"x": "' + payload.replace("'", "\\u0027") + '"}<|action_sep|>    y = x + 1\n', STEP_INTO
    )
    assert parsed.locals["x"] == payload
    assert not marker.exists()


def test_end_of_text_means_the_trace_ended_and_a_frame_separator_ends_a_completion(reader):
    assert reader.parse("<|end_of_text|>", STEP_INTO) is END_OF_TRACE
    parsed = reader.parse(
        '<|line_sep|>{"x": ".."}<|action_sep|>    y = x + 1\n<|frame_sep|><|line_sep|>junk', STEP_INTO
    )
    assert parsed.line == 2 and parsed.locals == {"x": "3"} and parsed.depth == 1 and parsed.function == "add_one"


def test_forced_event_token_as_cwmdbg_does(reader):
    parsed = reader.parse('{"x": ".."}<|action_sep|>    y = x + 1\n', STEP_INTO, forced_event="line")
    assert parsed.event == "line" and parsed.line == 2
    assert reader.prompt_tail(STEP_INTO, forced_event="line") == [Special("<|line_sep|>")]
    assert FRAME_SEP == "<|frame_sep|>"
