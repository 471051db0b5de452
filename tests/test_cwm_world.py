"""The neural world speaking CWM's format as Meta's cwmdbg drives CWM: what a session sends and where it stops.

The model is scripted from sys.settrace runs of the same programs (tests/test_cwm_exact.py's tracer):
each answer is the next frame CWM would write, so every prompt is a prefix of CWM's own trace.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import httpx
import pytest

from neural_dap.core.actions import STEP_INTO, Action
from neural_dap.core.flow import ProgramFlow
from neural_dap.core.source import SourceInfo
from neural_dap.core.state import State
from neural_dap.core.world import Entry, LaunchSpec, WorldError
from neural_dap.format.tokens import ALL_SPECIALS
from neural_dap.format.trace import END_OF_TRACE, FormatError, TraceText, render_trace
from neural_dap.llm.openai import OpenAICompatibleClient, _completion
from neural_dap.world.landing import frame_constraint
from neural_dap.world.neural import ModelSettings, NeuralWorld
from neural_dap.world.reconciled import ReconciledWorld

from .fakes import ScriptedClient, frame_text
from .test_cwm_exact import EXCEPTIONS, PATH, SCRIPT, as_states, run_traced

EVENT_TOKENS = ("<|call_sep|>", "<|line_sep|>", "<|return_sep|>", "<|exception_sep|>")


def cwm_oracle(truth: list[State]):
    """Answers each prompt with the next frame of the real run (a perfect CWM), minus a forced event
    token; a forced return right after a call is the callee's return (cwmdbg's `next` over a call)."""
    written = [s for s in truth if not (s.event == "call" and s.function == "<module>")]
    at: list[int] = []

    def answer(prompt: str, n: int) -> list[str]:
        if not at:
            at.append(prompt.count("<|frame_sep|>") - 1)  # frames given before the first prediction
        forced = next((t for t in EVENT_TOKENS if prompt.endswith(t)), None)
        k = at[0]
        if forced == "<|return_sep|>" and written[k - 1].event == "call":
            callee = written[k - 1].invocation
            k = next(
                j for j in range(k, len(written)) if written[j].event == "return" and written[j].invocation == callee
            )
        text = frame_text(written[k]) if k < len(written) else "<|end_of_text|>"
        at[0] = k + 1
        if forced is not None:
            assert text.startswith(forced), (forced, text)
            text = text[len(forced) :]
        return [text] * n

    return answer


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "prog.py"
    path.write_bytes(text.encode())
    return str(path)


async def test_a_whole_script_starts_at_its_first_statement_and_runs_to_the_end(tmp_path):
    program = write(tmp_path, SCRIPT)
    truth = as_states(run_traced(SCRIPT, None))
    client = ScriptedClient(cwm_oracle(truth))
    world = NeuralWorld(client, ModelSettings(dialect="cwm"))
    await world.start(LaunchSpec(program=program))
    stop = await world.act(Action("step_into"))
    assert "def total(xs):  # << START_OF_TRACE\n    return sum(xs)" in client.prompts[0]
    assert client.prompts[0].endswith("<|frame_sep|><|line_sep|>")  # no call frame of total() first
    assert (stop.state.event, stop.state.line) == ("line", 1)
    stop = await world.act(Action("continue"))
    assert stop.at_end and stop.exit is not None and stop.exit.code == 0
    assert world.summary()["invalidFrames"] == 0
    # every frame of the real run, comprehension and exception events included, was accepted
    assert len(client.prompts) == len(truth) - 1


async def test_a_function_launch_sends_the_file_as_it_is(tmp_path):
    text = "import os\n\ndef unrelated():\n    return os.sep\n\x0c\ndef f(x):\n    return x + 1\n\nprint(f(1))"
    program = write(tmp_path, text)
    client = ScriptedClient([['{"x": ".."}<|action_sep|>    return x + 1\n']])
    world = NeuralWorld(client, ModelSettings(dialect="cwm"))
    await world.start(LaunchSpec(program=program, entry=Entry("f", "1")))
    await world.act(Action("step_into"))
    marked = text.replace("def f(x):", "def f(x):  # << START_OF_TRACE")
    assert client.prompts[0].startswith(f"<|begin_of_text|><|trace_context_start|>{marked}<|frame_sep|>")
    # lines are numbered as Python numbers them (the form feed is no line break): f's call frame is its def
    assert client.prompts[0].endswith(
        '<|frame_sep|><|call_sep|>{"x": "1"}<|action_sep|>def f(x):\n<|frame_sep|><|line_sep|>'
    )


async def test_a_file_already_marked_for_cwmdbg_is_sent_with_its_one_marker(tmp_path):
    text = "def f(x):  # << START_OF_TRACE\n    return x + 1\n"
    client = ScriptedClient([['{"x": ".."}<|action_sep|>    return x + 1\n']])
    world = NeuralWorld(client, ModelSettings(dialect="cwm"))
    await world.start(LaunchSpec(program=write(tmp_path, text), entry=Entry("f", "1")))
    stop = await world.act(Action("step_into"))
    assert client.prompts[0].startswith(f"<|begin_of_text|><|trace_context_start|>{text}<|frame_sep|>")
    assert stop.state.line == 2


async def test_step_out_goes_one_step_past_the_return_as_cwmdbg_does(tmp_path):
    program = write(tmp_path, EXCEPTIONS)
    truth = as_states(run_traced(EXCEPTIONS, "outer", (2,)))
    client = ScriptedClient(cwm_oracle(truth))
    world = NeuralWorld(client, ModelSettings(dialect="cwm"))
    await world.start(LaunchSpec(program=program, entry=Entry("outer", "2")))
    for _ in range(3):  # into safe(): its call, then its first line
        stop = await world.act(Action("step_into"))
    assert (stop.state.function, stop.state.line) == ("safe", 7)
    stop = await world.act(Action("step_return"))
    # check() was stepped over by forcing its return, and that frame too was constrained
    assert any(p.endswith("<|return_sep|>") for p in client.prompts) and None not in client.constraints
    # safe returns at line 8 (after check() returned); cwmdbg's step_out takes one more step: outer's next line
    assert (stop.state.event, stop.state.line, stop.state.function) == ("line", 14, "outer")
    assert stop.state.locals == {"n": "2", "r": "2"}


async def test_an_exception_leaving_the_entry_ends_the_session_as_uncaught(tmp_path):
    program = write(tmp_path, EXCEPTIONS)
    truth = as_states(run_traced(EXCEPTIONS, "outer", (-2,)))
    world = NeuralWorld(ScriptedClient(cwm_oracle(truth)), ModelSettings(dialect="cwm"))
    await world.start(LaunchSpec(program=program, entry=Entry("outer", "-2")))
    stop = await world.act(Action("continue"))
    # the exception passes through outer (an exception event at depth 0), which then returns None
    assert stop.at_end and (stop.state.event, stop.state.line, stop.state.value) == ("return", 14, "None")
    assert stop.exit is not None and stop.exit.code == 1 and "ValueError('negative')" in stop.exit.description
    assert world.summary()["invalidFrames"] == 0


COMPREHENSION = textwrap.dedent(
    """\
    def f(xs):
        ys = [x + 1 for x in xs]
        return ys
    """
)


async def test_the_cwm_constraint_lets_the_model_enter_a_comprehension_frame(tmp_path):
    program = write(tmp_path, COMPREHENSION)
    line = '{"xs": ".."}<|action_sep|>    ys = [x + 1 for x in xs]\n'
    frame = '<|call_sep|>{".0": "<list_iterator object>"}<|action_sep|>    ys = [x + 1 for x in xs]\n'
    client = ScriptedClient([[line], [frame]])
    world = NeuralWorld(client, ModelSettings(dialect="cwm"))
    await world.start(LaunchSpec(program=program, entry=Entry("f", "[1]")))
    await world.act(Action("step_into"))
    stop = await world.act(Action("step_into"))
    assert client.constraints[-1] is not None and client.constraints[-1].accepts(frame)
    assert (stop.state.event, stop.state.function, stop.state.locals) == (
        "call",
        "<listcomp>",
        {".0": "<list_iterator object>"},
    )
    assert [f.function for f in stop.stack] == ["<listcomp>", "f"]
    # neural-dap's recorder does not trace comprehensions (inlined since 3.12): nd keeps them out
    client = ScriptedClient([["<|line_sep|>" + line], [frame]] * 3)
    world = NeuralWorld(client, ModelSettings(dialect="nd"))
    await world.start(LaunchSpec(program=program, entry=Entry("f", "[1]")))
    await world.act(Action("step_into"))
    with pytest.raises(WorldError, match="not a frame the program allows"):
        await world.act(Action("step_into"))
    assert client.constraints[-1] is not None and not client.constraints[-1].accepts(frame)


LOOP = textwrap.dedent(
    """\
    def inner(n):
        s = 0
        for i in range(n):
            s += i
        return s

    def outer(n):
        a = inner(n)
        return a + 1
    """
)


class ShortContext(ScriptedClient):
    def __init__(self, script, limit: int) -> None:
        super().__init__(script)
        self.limit = limit

    async def context_length(self) -> int | None:
        return self.limit


async def test_a_history_that_no_longer_fits_restarts_as_a_gapless_cwm_trace(tmp_path):
    program = write(tmp_path, LOOP)
    truth = as_states(run_traced(LOOP, "outer", (6,)))
    full = render_trace(truth, "cwm", SourceInfo(LOOP, PATH)).text()
    frames_of = lambda prompt: prompt.split("<|frame_sep|>", 1)[1]  # noqa: E731
    seen: list[str] = []
    oracle = cwm_oracle(truth)

    def answer(prompt: str, n: int) -> list[str]:
        seen.append(prompt)
        return oracle(prompt, n)

    world = NeuralWorld(ShortContext(answer, limit=len(LOOP) + 700), ModelSettings(dialect="cwm"))
    await world.start(LaunchSpec(program=program, entry=Entry("outer", "6")))
    stop = await world.act(Action.at_lines("breakpoint", [5]))
    assert world.windows >= 1
    restarted = next(p for p in seen if "def inner(n):  # << START_OF_TRACE" in p)
    # the new conversation is inner's own trace from its call: consecutive frames, no jumps
    assert frames_of(restarted).startswith('<|call_sep|>{"n": "6"}<|action_sep|>def inner(n):\n<|frame_sep|>')
    assert frames_of(restarted) in full
    assert (stop.state.line, stop.state.locals["s"]) == (5, "15")
    assert [s.function for s in stop.stack] == ["inner", "outer"]  # the caller is still known


def mock_vllm(answer) -> httpx.MockTransport:
    """A vLLM server as the client sees it: one id per character (special tokens one id each), and
    completions from `answer(body)` as vLLM writes them (a stop token left out of the text)."""
    specials = {t: 200_000 + k for k, t in enumerate((*EVENT_TOKENS, "<|end_of_text|>", "<|frame_sep|>"))}
    specials |= {t: 200_100 + k for k, t in enumerate(ALL_SPECIALS) if t not in specials}

    def handle(request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "cwm", "max_model_len": 100_000}]})
        if path == "/tokenize":
            text = json.loads(request.content)["prompt"]
            return httpx.Response(
                200, json={"tokens": [specials.get(text, 0)] if text in specials else [ord(c) for c in text]}
            )
        if path == "/v1/completions":
            return httpx.Response(200, json={"choices": [answer(json.loads(request.content))], "usage": {}})
        return httpx.Response(404)

    return httpx.MockTransport(handle)


async def test_an_end_of_text_that_vllm_left_out_of_the_text_reads_as_the_end():
    info = SourceInfo(LOOP, PATH)
    trace = TraceText("cwm", info, 1, path=PATH, entry_function="inner")
    for state in as_states(run_traced(LOOP, "inner", (1,))):
        seen = trace.append(state)
    constraint = frame_constraint(ProgramFlow(info, settrace_frames=True), trace, seen, STEP_INTO)
    assert constraint is not None and constraint.end  # the entry has returned: the end may come
    answers: list[dict] = []
    client = OpenAICompatibleClient("http://vllm.test/v1", transport=mock_vllm(lambda body: answers.pop(0)))
    eos = {"text": "", "finish_reason": "stop", "stop_reason": None}  # vLLM stopped at <|end_of_text|>
    answers += [eos]
    result = await client.complete([1, 2, 3], max_tokens=16, stop_ids=[200_005], constraint=constraint)
    assert result.completions[0].text == "<|end_of_text|>" and result.requests == 1
    assert trace.parse(result.completions[0].text) is END_OF_TRACE
    # a plain answer the frame refuses is made again one segment at a time: the end is chosen as a special token
    answers += [{"text": "???", "finish_reason": "length", "stop_reason": None}, eos]
    result = await client.complete([1, 2, 3], max_tokens=16, stop_ids=[200_005], constraint=constraint)
    assert result.completions[0].text == "<|end_of_text|>" and not answers
    await client.close()


def test_an_empty_text_stopped_by_the_frame_separator_is_no_end():
    trace = TraceText("cwm", SourceInfo(LOOP), 7, entry_function="outer")
    trace.append(State("call", 7, "def outer(n):", "outer", 0, 0, {"n": "6"}))
    stopped_by_eos = _completion({"text": "", "finish_reason": "stop", "stop_reason": None}, ended_by_eos=True)
    assert trace.parse(stopped_by_eos.text) is END_OF_TRACE
    with pytest.raises(FormatError, match="empty frame"):
        trace.parse(_completion({"text": "", "finish_reason": "stop", "stop_reason": 128100}).text)


async def test_stepping_back_and_out_again_lands_where_the_first_step_out_did(tmp_path):
    program = write(tmp_path, EXCEPTIONS)
    truth = as_states(run_traced(EXCEPTIONS, "outer", (2,)))
    client = ScriptedClient(cwm_oracle(truth))
    world = NeuralWorld(client, ModelSettings(dialect="cwm"))
    await world.start(LaunchSpec(program=program, entry=Entry("outer", "2")))
    for _ in range(3):
        await world.act(Action("step_into"))
    first = await world.act(Action("step_return"))
    asked = len(client.prompts)
    for _ in range(5):  # back over outer's line, safe's return, check's return and call, safe's line 8
        back = await world.act(Action("inv_step_into"))
    assert (back.state.function, back.state.line) == ("safe", 7)
    again = await world.act(Action("step_return"))
    assert len(client.prompts) == asked  # known states: a lookup, no model call
    assert (again.state.event, again.state.line, again.state.function) == ("line", 14, "outer")
    assert again.state == first.state


async def test_reconciling_a_cwm_step_out_with_a_recording_compares_the_same_stop(tmp_path):
    program = write(tmp_path, EXCEPTIONS)
    truth = as_states(run_traced(EXCEPTIONS, "outer", (2,)))
    model = NeuralWorld(ScriptedClient(cwm_oracle(truth)), ModelSettings(dialect="cwm"))
    world = ReconciledWorld(model, "recorded")
    await world.start(LaunchSpec(program=program, entry=Entry("outer", "2")))
    for _ in range(3):
        await world.act(Action("step_into"))
    stop = await world.act(Action("step_return"))
    assert (stop.state.line, stop.state.function) == (14, "outer")
    assert not stop.divergences


async def test_an_exception_caught_in_the_entry_is_not_reported_as_uncaught(tmp_path):
    program = write(tmp_path, EXCEPTIONS)
    uncaught = frozenset({"uncaught"})
    caught_truth = as_states(run_traced(EXCEPTIONS, "safe", (-1,)))
    world = NeuralWorld(ScriptedClient(cwm_oracle(caught_truth)), ModelSettings(dialect="cwm"))
    await world.start(LaunchSpec(program=program, entry=Entry("safe", "-1")))
    # the exception passes through safe (an exception event at depth 0), whose handler catches it
    stop = await world.act(Action("continue"), exceptions=uncaught)
    assert stop.at_end and not stop.hit_exception and stop.exit is not None and stop.exit.code == 0
    left_truth = as_states(run_traced(EXCEPTIONS, "outer", (-2,)))
    world = NeuralWorld(ScriptedClient(cwm_oracle(left_truth)), ModelSettings(dialect="cwm"))
    await world.start(LaunchSpec(program=program, entry=Entry("outer", "-2")))
    stop = await world.act(Action("continue"), exceptions=uncaught)
    assert stop.at_end and stop.hit_exception and stop.exit is not None and stop.exit.code == 1
