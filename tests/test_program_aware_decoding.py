"""Program-aware decoding: the static facts are sound (every real step lands inside them), and a
frame the model writes under the constraint is valid by construction."""

from __future__ import annotations

import random
import re

import pytest

from neural_dap.core.flow import ProgramFlow
from neural_dap.core.source import SourceInfo
from neural_dap.corpus.programs import generate
from neural_dap.corpus.scripts import generate_script
from neural_dap.corpus.trajectories import Policy, choose_action
from neural_dap.format.tokens import ACTION_SEP, END
from neural_dap.format.trace import TraceText
from neural_dap.trace.recorder import Limits, Program, record
from neural_dap.trace.tree import StateTree
from neural_dap.world.landing import frame_constraint


def _programs(cruxeval_rows, count: int):
    rng = random.Random(4)
    rows = rng.sample(cruxeval_rows, min(count, len(cruxeval_rows))) if cruxeval_rows else []
    out = [(r["code"], "f", r["input"], f"/crux/{r['id']}.py") for r in rows]
    out += [(p.source, p.entry, p.args, f"/gen/{s}.py") for s in range(count) for p in [generate(1000 + s)]]
    out += [(p.source, p.entry, p.args, f"/script/{s}.py") for s in range(count) for p in [generate_script(2000 + s)]]
    return out


@pytest.fixture(scope="module")
def recorded(request):
    try:
        rows = request.getfixturevalue("cruxeval_rows")
    except pytest.skip.Exception:
        rows = []
    out = []
    for source, entry, args, path in _programs(rows, 40):
        rec = record(Program(path, source=source, entry=entry, entry_args=args), Limits(wall_time=5, max_events=5000))
        states = list(rec.states)
        if len(states) > 1:
            out.append((SourceInfo(source, path), states))
    return out


def test_every_recorded_step_lands_among_the_static_successors(recorded):
    checked = 0
    for source, states in recorded:
        flow = ProgramFlow(source)
        lines: dict[int, int | None] = {}  # invocation -> its latest line
        for state in states[1:]:
            if state.event == "call":
                continue  # calls are checked by the constraint test below
            code = flow.code_for(state.function, state.line, state.event)
            assert code is not None, (state.function, state.line)
            last = lines.get(state.invocation)
            if last is not None and state.event != "exception":
                assert (state.event, state.line) in code.can_follow(last), (
                    source.filename,
                    last,
                    state.event,
                    state.line,
                )
                checked += 1
            if state.event == "line":
                lines[state.invocation] = state.line
    assert checked > 500


def test_every_real_frame_is_accepted_by_its_constraint_and_lands_where_it_really_is(recorded):
    rng = random.Random(0)
    frames = candidates = heads_only = 0
    for source, states in recorded:
        flow = ProgramFlow(source)
        tree = StateTree(states)
        for _ in range(3):
            start = rng.choice([0] + [k for k, s in enumerate(states) if s.depth == 0])
            first = states[start]
            entry_line = first.line if first.event == "call" else (source.def_line(first.function) or first.line)
            trace = TraceText("nd", source, entry_line, entry_function=first.function)
            seen, i = trace.append(first), start
            for _ in range(15):
                action = choose_action(rng, tree, i, Policy(), source)
                if action is None:
                    break
                j = tree.apply(i, action)
                if j == i:
                    continue
                constraint = frame_constraint(flow, trace, seen, action)
                n = len(trace.frames)
                seen = trace.append(states[j], action)
                text = "".join(trace.frames[n][len(trace.action_segments(action)) : -1])
                assert constraint is not None
                assert constraint.accepts(text), (source.filename, str(action), text)
                # the same frame as a server's one regex sees it (its end-of-sequence token is a stop)
                assert re.fullmatch(constraint.frame_regex(), text.replace(END, "")), (str(action), text)
                # or its head, where the program leaves one line: the rest is forced, and the same
                heads = constraint.frame_regex(head_only=True)
                if not re.fullmatch(heads, text.replace(END, "")):
                    head = text[: text.index(ACTION_SEP)]
                    assert re.fullmatch(heads, head), (str(action), text)
                    ending = constraint.forced_ending(constraint.run(head, complete=False))
                    assert ending is not None and head + ending == text, (str(action), text, constraint.landings())
                    heads_only += 1
                assert (states[j].event, states[j].line) in constraint.landed(text)
                frames += 1
                candidates += len(constraint.landings())
                i = j
    assert frames > 300 and heads_only > 50
    assert candidates / frames < 4  # the candidates stay few: the model chooses among a handful of lines


def test_the_constraint_refuses_what_the_program_cannot_do():
    source = SourceInfo("def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n")
    flow = ProgramFlow(source)
    from neural_dap.core.actions import Action
    from neural_dap.core.state import State

    trace = TraceText("nd", source, 1, entry_function="f")
    trace.append(State("call", 1, "def f(xs):", "f", 0, 0, {"xs": "[1]"}))
    seen = trace.append(State("line", 2, "    total = 0", "f", 0, 0, {"xs": "[1]"}), Action("step_into"))
    c = frame_constraint(flow, trace, seen, Action("step_over"))
    assert c is not None and c.events == ("exception", "line")
    assert c.accepts('<|line_sep|>{"xs": "..", "total": "0"}<|action_sep|>    for x in xs:\n')
    assert not c.accepts('<|line_sep|>{"xs": "..", "total": "0"}<|action_sep|>    total = 0\n')  # the same line again
    assert not c.accepts('<|line_sep|>{"total": "0"}<|action_sep|>    for x in xs:\n')  # xs cannot vanish
    assert not c.accepts('<|line_sep|>{"xs": "..", "total": ".."}<|action_sep|>    for x in xs:\n')  # no earlier total
    assert not c.accepts('<|line_sep|>{"xs": "..", "y": "0"}<|action_sep|>    for x in xs:\n')  # no such name
    assert not c.accepts('<|line_sep|>{"xs": "..", "total": 0}<|action_sep|>    for x in xs:\n')  # values are strings
    assert not c.accepts("<|end_of_text|>")  # the function has not returned
    assert not c.accepts('<|call_sep|>{"xs": "[1]"}<|action_sep|>def f(xs):\n')  # a step over does not enter calls
    # once the line is the only one left, the rest of the frame is known without the model
    after_locals = c.run('<|line_sep|>{"xs": "..", "total": "0"}<|action_sep|>', complete=False)
    assert c.forced_rest(after_locals) == b"    for x in xs:\n"
    assert c.forced_rest(c.run('<|line_sep|>{"xs": "..", "total": "0"}', complete=False)) is None  # locals: a choice
    whole = c.frame_regex()  # one regex for the whole frame refuses the same
    assert re.fullmatch(whole, '<|line_sep|>{"xs": "..", "total": "0"}<|action_sep|>    for x in xs:\n')
    for refused in (
        '<|line_sep|>{"xs": "..", "total": "0"}<|action_sep|>    total = 0\n',
        '<|line_sep|>{"total": "0"}<|action_sep|>    for x in xs:\n',
        '<|line_sep|>{"xs": "..", "total": ".."}<|action_sep|>    for x in xs:\n',
        '<|line_sep|>{"xs": "..", "y": "0"}<|action_sep|>    for x in xs:\n',
        '<|line_sep|>{"xs": "..", "total": 0}<|action_sep|>    for x in xs:\n',
        "",
        '<|call_sep|>{"xs": "[1]"}<|action_sep|>def f(xs):\n',
    ):
        assert not re.fullmatch(whole, refused), refused


def test_masked_decoding_never_reaches_a_dead_end(recorded):
    """A random 'model' that picks any allowed token always finishes a frame the constraint accepts."""
    from transformers import PreTrainedTokenizerFast

    from neural_dap.format.tokens import FRAME_SEP
    from neural_dap.llm.constrained import TokenIndex, token_pieces
    from neural_dap.world.factory import embedded_model_path

    index = TokenIndex(token_pieces(PreTrainedTokenizerFast.from_pretrained(embedded_model_path())))
    frame_sep = index.special_ids[str(FRAME_SEP)]
    rng = random.Random(3)
    finished = 0
    for source, states in recorded[::3]:
        flow = ProgramFlow(source)
        tree = StateTree(states)
        trace = TraceText("nd", source, states[0].line, entry_function=states[0].function)
        seen, i = trace.append(states[0]), 0
        for _ in range(6):
            action = choose_action(rng, tree, i, Policy(), source)
            if action is None:
                break
            constraint = frame_constraint(flow, trace, seen, action)
            assert constraint is not None
            state, tokens = constraint.start(), []
            for step in range(300):
                # near the end of the room, the shortest way out, as the in-process client does
                way_out = constraint.close_segment(state) if step > 200 and constraint.in_values(state) else None
                mask = index.toward_mask(way_out) if way_out else None
                mask = mask if mask is not None else index.mask(constraint, state)
                choices = [t for t in range(len(mask)) if mask[t]]
                assert choices, f"dead end at {state!r} after {tokens!r}"
                token = frame_sep if frame_sep in choices else rng.choice(choices)
                after = index.advance(constraint, state, token)
                assert after is not None, (
                    f"the mask allowed {index.pieces[token]!r} at {state!r}, which the constraint refuses"
                )
                state = after
                tokens.append(token)
                if constraint.done(state):
                    finished += 1
                    break
            else:
                raise AssertionError("no end within 300 tokens")
            j = tree.apply(i, action)
            if j == i:
                break
            seen, i = trace.append(states[j], action), j
    assert finished > 30


def test_a_segment_cut_off_by_a_token_budget_is_ended_the_shortest_way_the_frame_allows():
    """A model server's constrained output can stop at its token budget mid-segment (a long string
    value, say); the frame is then finished the shortest valid way instead of failing the step."""
    source = SourceInfo("def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n")
    from neural_dap.core.actions import Action
    from neural_dap.core.state import State

    trace = TraceText("nd", source, 1, entry_function="f")
    trace.append(State("call", 1, "def f(xs):", "f", 0, 0, {"xs": "[1]"}))
    seen = trace.append(State("line", 2, "    total = 0", "f", 0, 0, {"xs": "[1]"}), Action("step_into"))
    c = frame_constraint(ProgramFlow(source), trace, seen, Action("step_over"))
    assert c is not None
    in_a_value = c.run('<|line_sep|>{"xs": "..", "total": "12345', complete=False)
    assert c.close_segment(in_a_value) == b'"}'
    before_a_key = c.run("<|line_sep|>{", complete=False)
    assert c.close_segment(before_a_key) == b'"xs": ""}'  # xs cannot vanish: its key is written
    in_a_line = c.run('<|line_sep|>{"xs": "..", "total": "0"}<|action_sep|>    for', complete=False)
    assert c.close_segment(in_a_line) == b" x in xs:\n"
    whole = '<|line_sep|>{"xs": "..", "total": "12345"}<|action_sep|>    for x in xs:\n'
    assert c.accepts(whole) and c.close_segment(c.run(whole, complete=False)) == b""


def test_a_source_line_full_of_regex_syntax_is_matched_as_itself_in_a_servers_regex():
    """Source text reaches a server's regex: metacharacters, escapes and control bytes in a line are
    literal there, so the line cannot widen (or break) what the server lets the model write."""
    hostile = "    s = '.*(a|b)+[^x]{2,}\\\\d$^?\\t#~&-' + \"\\x1b\"  # (?P<x>.*)\n"
    source = SourceInfo("def f():\n    x = 1\n" + hostile + "    return s\n")
    from neural_dap.core.actions import Action
    from neural_dap.core.state import State

    trace = TraceText("nd", source, 1, entry_function="f")
    trace.append(State("call", 1, "def f():", "f", 0, 0, {}))
    seen = trace.append(State("line", 2, "    x = 1", "f", 0, 0, {}), Action("step_into"))
    c = frame_constraint(ProgramFlow(source), trace, seen, Action("step_over"))
    assert c is not None
    whole = c.frame_regex()
    line = source.line_text(3) + "\n"
    assert re.fullmatch(whole, '<|line_sep|>{"x": "1"}<|action_sep|>' + line)
    assert not re.fullmatch(whole, '<|line_sep|>{"x": "1"}<|action_sep|>    s = anything\n')
