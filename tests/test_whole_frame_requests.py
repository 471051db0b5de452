"""A constrained prediction from a served model (vLLM) is one request: the whole frame as a regex
in `structured_outputs`, its special tokens written as their text (vLLM's xgrammar matches the
trace format's added tokens by their text). A server that spells the special tokens out, or takes
no regex, gets the plain request and the segment-by-segment repair instead; a frame cut by the
token budget is repaired. The server here is vLLM as the client sees it (tests/test_cwm_world's
mock); tests/test_vllm_integration.py drives the real one."""

from __future__ import annotations

import re

import httpx
import pytest

from neural_dap.core.actions import Action
from neural_dap.core.flow import ProgramFlow
from neural_dap.core.source import SourceInfo
from neural_dap.core.state import State
from neural_dap.format.tokens import split_specials
from neural_dap.format.trace import TraceText
from neural_dap.llm.base import ModelError
from neural_dap.llm.openai import OpenAICompatibleClient
from neural_dap.world.landing import frame_constraint

from .test_cwm_world import mock_vllm

SOURCE = "def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n"
HEAD = '<|line_sep|>{"xs": "..", "total": "0"}'
FRAME = HEAD + "<|action_sep|>    for x in xs:\n"
FRAME_SEP_ID = 200_005  # not a real id: the mock gives the stop no meaning of its own


def _constraint():
    source = SourceInfo(SOURCE)
    trace = TraceText("nd", source, 1, entry_function="f")
    trace.append(State("call", 1, "def f(xs):", "f", 0, 0, {"xs": "[1]"}))
    seen = trace.append(State("line", 2, "    total = 0", "f", 0, 0, {"xs": "[1]"}), Action("step_into"))
    constraint = frame_constraint(ProgramFlow(source), trace, seen, Action("step_over"))
    assert constraint is not None
    return constraint


def _answer(text: str, *, spelled: bool = False, finish: str = "stop", stop_reason: int | None = FRAME_SEP_ID) -> dict:
    """vLLM's choice for `text`: one token per special token (or one per character when the server
    `spelled` them out) and per character of plain text, with the legacy `logprobs` object."""
    tokens: list[str] = []
    for piece in split_specials(text):
        tokens += list(piece) if spelled or not piece.startswith("<|") else [piece]
    offsets, at = [], 0
    for token in tokens:
        offsets.append(at)
        at += len(token)
    return {
        "text": text,
        "finish_reason": finish,
        "stop_reason": stop_reason if finish == "stop" else None,
        "logprobs": {"text_offset": offsets, "token_logprobs": [-0.1] * len(tokens), "tokens": tokens},
    }


class Server:
    """Answers each completion request with the next of `answers`, and keeps the requests."""

    def __init__(self, *answers) -> None:
        self.answers = list(answers)
        self.bodies: list[dict] = []

    def __call__(self, body: dict) -> dict:
        self.bodies.append(body)
        answer = self.answers.pop(0)
        if isinstance(answer, int):
            raise _Status(answer)
        return answer

    def transport(self) -> httpx.MockTransport:
        inner = mock_vllm(self)

        def handle(request: httpx.Request) -> httpx.Response:
            try:
                return inner.handle_request(request)
            except _Status as status:
                return httpx.Response(status.code, json={"error": {"message": "structured outputs are not enabled"}})

        return httpx.MockTransport(handle)


class _Status(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


async def _complete(client: OpenAICompatibleClient):
    return await client.complete([1, 2, 3], max_tokens=64, stop_ids=[FRAME_SEP_ID], constraint=_constraint())


async def test_a_constrained_prediction_is_one_request_with_the_whole_frame_as_a_regex():
    server = Server(_answer(HEAD), _answer(HEAD, spelled=True))
    client = OpenAICompatibleClient("http://vllm.test/v1", transport=server.transport())
    result = await _complete(client)
    body = server.bodies[0]
    assert body["stop_token_ids"] == [FRAME_SEP_ID] and body["logprobs"] == 1
    regex = body["structured_outputs"]["regex"]
    # the step over has one line to land on: the regex ends after the locals, and the line is the
    # program's, added by the client (not decoded by the server), certain
    assert re.fullmatch(regex, HEAD)
    assert not re.fullmatch(regex, HEAD.replace('"0"', '".."'))  # no earlier total to repeat
    made = result.completions[0]
    assert made.text == FRAME and result.requests == 1
    assert made.offsets[-1] == len(HEAD) and made.logprobs[-1] == 0.0 and len(made.logprobs) > 1
    # once the server has matched special tokens, one the model chose to spell out (its text is
    # the same, and the frame allowed it) is kept
    spelled = await _complete(client)
    assert spelled.completions[0].text == FRAME and spelled.requests == 1 and len(server.bodies) == 2
    assert client.describe()["wholeFrames"] is True
    await client.close()


async def test_a_server_that_spells_special_tokens_out_gets_plain_requests_and_repairs():
    """A grammar engine that does not match a special token by its text writes it character by
    character: the model would read a frame it never saw. The client asks the plain way from then on."""
    server = Server(_answer(HEAD, spelled=True), _answer(FRAME), _answer(FRAME))
    client = OpenAICompatibleClient("http://vllm.test/v1", transport=server.transport())
    result = await _complete(client)
    assert result.completions[0].text == FRAME
    assert "structured_outputs" in server.bodies[0] and "structured_outputs" not in server.bodies[1]
    again = await _complete(client)  # the next prediction goes the plain way at once
    assert again.completions[0].text == FRAME and "structured_outputs" not in server.bodies[2]
    assert client.describe()["wholeFrames"] is False
    await client.close()


async def test_a_server_that_takes_no_regex_gets_the_plain_request():
    server = Server(400, _answer(FRAME), _answer(FRAME))
    client = OpenAICompatibleClient("http://vllm.test/v1", transport=server.transport())
    assert (await _complete(client)).completions[0].text == FRAME
    assert (await _complete(client)).requests == 1 and len(server.bodies) == 3  # no regex asked again
    await client.close()


async def test_a_whole_frame_cut_by_the_token_budget_is_repaired_segment_by_segment():
    cut = FRAME[: FRAME.index('"0"') + 2]  # ... "total": "0   (the budget ran out inside the value)
    locals_again = {"text": '{"xs": "..", "total": "0"}', "finish_reason": "stop"}  # the cut segment, asked again
    server = Server(_answer(cut, finish="length"), locals_again)
    client = OpenAICompatibleClient("http://vllm.test/v1", transport=server.transport())
    result = await _complete(client)
    made = result.completions[0].text
    assert _constraint().accepts(made) and made.endswith("<|action_sep|>    for x in xs:\n")
    assert result.requests == 2 and "regex" in server.bodies[1]["structured_outputs"]
    assert len(server.bodies) == 2  # the only line left is the program's: not asked for
    await client.close()


async def test_a_frame_the_server_ended_with_its_end_of_text_token_is_finished_as_the_program_says():
    """vLLM lets a request's stop tokens, the end-of-sequence one included, end it where its regex
    ends: after a head, or after a whole frame. That end is no choice of the model's."""
    after_head = _answer(HEAD, stop_reason=None)  # stopped by <|end_of_text|>, which vLLM leaves out
    after_frame = _answer(FRAME, stop_reason=None)
    server = Server(after_head, after_frame)
    client = OpenAICompatibleClient("http://vllm.test/v1", transport=server.transport())
    for _ in range(2):
        result = await _complete(client)
        assert result.completions[0].text == FRAME and result.requests == 1 and result.constrained == 0
    await client.close()


async def test_a_server_is_judged_only_by_an_answer_that_shows_how_it_wrote_special_tokens():
    """An answer without token offsets (or without special tokens: a cwm frame whose event the
    prompt forced) says nothing of the server's grammar engine; a later one still can. And where
    the server gave no probabilities, the program's text adds none: the frame's confidence stays
    unknown rather than certain."""
    bare = {"text": HEAD, "finish_reason": "stop", "stop_reason": FRAME_SEP_ID}  # no logprobs
    server = Server(bare, _answer(HEAD, spelled=True), _answer(FRAME))
    client = OpenAICompatibleClient("http://vllm.test/v1", transport=server.transport())
    first = (await _complete(client)).completions[0]
    assert first.text == FRAME and first.offsets == () and first.logprobs == ()
    assert "wholeFrames" not in client.describe()  # not judged yet
    await _complete(client)  # spelled out, and nothing ever came whole: plain requests from now on
    assert client.describe()["wholeFrames"] is False and "structured_outputs" not in server.bodies[2]
    await client.close()


async def test_a_frame_the_server_refuses_to_constrain_is_asked_the_plain_way_and_the_next_whole_again():
    """A server that took whole frames can still refuse one (its grammar did not compile in time):
    that frame goes the plain way, the session does not fail, and the next is asked whole again."""
    server = Server(_answer(HEAD), 400, _answer(FRAME), _answer(HEAD))
    client = OpenAICompatibleClient("http://vllm.test/v1", transport=server.transport())
    for _ in range(3):
        assert (await _complete(client)).completions[0].text == FRAME
    assert ["structured_outputs" in body for body in server.bodies] == [True, True, False, True]
    await client.close()


async def test_an_error_the_plain_request_gets_too_does_not_turn_whole_frames_off():
    """A request the server refuses either way (a prompt too long, say) fails that step; it says
    nothing about regexes, and the next frame is asked whole."""
    server = Server(400, 400, _answer(HEAD))
    client = OpenAICompatibleClient("http://vllm.test/v1", transport=server.transport())
    with pytest.raises(ModelError, match="HTTP 400"):
        await _complete(client)
    assert (await _complete(client)).completions[0].text == FRAME
    assert "structured_outputs" in server.bodies[2] and client.describe()["wholeFrames"] is True
    await client.close()
