"""Issue 25: fast decoding (the same greedy frames as before, nothing on stderr), a probability on
every predicted value, a looping value cut and shown as uncertain, calibration in `eval nextstate`.

The golden completions below were captured from the transformers decode path before the fast one
replaced it (greedy, the embedded model): the fast path must give the very same text.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from neural_dap.core.actions import Action
from neural_dap.core.world import Entry, LaunchSpec
from neural_dap.world.factory import embedded_model_path
from neural_dap.world.neural import ModelSettings, NeuralWorld

from .conftest import EXAMPLES, ROOT

pytest.importorskip("torch")
pytest.importorskip("transformers")

KIND = {"s": "step_into", "n": "step_over", "r": "step_return", "back": "inv_step_over"}
SESSIONS = {
    "bubble": (EXAMPLES / "bubble_sort.py", Entry("bubble_sort", "[5, 2, 4, 1, 3]"), "s s s s s s"),
    "inventory": (EXAMPLES / "inventory.py", None, "n n n s n n n r back"),
}
NEURAL = ("--world", "neural")
# per predicted stop: [the constrained completion, the unconstrained one on the same prompt]
GOLDEN = {
    "bubble": [
        (
            '<|line_sep|>{"values": ".."}<|action_sep|>    items = list(values)\n',
            '<|line_sep|>{"values": ".."}<|action_sep|>    items = list(values)\n',
        ),
        (
            '<|line_sep|>{"values": "..", "items": "[5, 2, 4, 1, 3]"}<|action_sep|>    n = len(items)\n',
            '<|line_sep|>{"values": "..", "items": "[5, 2, 4, 1, 3]"}<|action_sep|>    n = len(items)\n',
        ),
        (
            '<|line_sep|>{"values": "..", "items": "..", "n": "1"}<|action_sep|>    for end in range(n - 1, 0, -1):\n',
            '<|line_sep|>{"values": "..", "items": "..", "n": "1"}<|action_sep|>    for i in range(end):\n',
        ),
        (
            '<|line_sep|>{"values": "..", "items": "..", "n": "..", "swapped": "3"}<|action_sep|>    return items\n',
            '<|line_sep|>{"values": "..", "items": "..", "n": "..", "n": "..", "s": "0"}<|action_sep|>    retur'
            "n items\n",
        ),
        (
            '<|return_sep|><|action_sep|>    return items\n<|arg_sep|>"[5, 2, 4, 1, 3]"',
            '<|return_sep|><|action_sep|>    return items\n<|arg_sep|>"[5, 2, 4, 1, 3]"',
        ),
    ],
    "inventory": [
        (
            '<|line_sep|>{}<|action_sep|>"""A small inventory: a class with methods, a dataclass, and a main fu'
            'nction."""\n',
            '<|line_sep|>{}<|action_sep|>"""AJl ls for skatetorys\n',
        ),
        (
            "<|line_sep|>{}<|action_sep|>from dataclasses import dataclass\n",
            "<|line_sep|>{}<|action_sep|>from dataclasses import dataclass\n",
        ),
        (
            "<|line_sep|>{}<|action_sep|>@dataclass\n",
            "<|line_sep|>{}<|action_sep|>@dataclass\n",
        ),
        (
            "<|line_sep|>{}<|action_sep|>class Item:\n",
            "<|line_sep|>{}<|action_sep|>class Joory:\n",
        ),
        (
            "<|line_sep|>{}<|action_sep|>@dataclass\n",
            "<|line_sep|>{}<|action_sep|>def main():\n",
        ),
        (
            "<|line_sep|>{}<|action_sep|>class Item:\n",
            "<|line_sep|>{}<|action_sep|>class Tally:\n",
        ),
        (
            "<|line_sep|>{}<|action_sep|>@dataclass\n",
            "<|line_sep|>{}<|action_sep|>def main():\n",
        ),
        (
            '<|return_sep|><|action_sep|>    main()\n<|arg_sep|>"None"',
            '<|return_sep|><|action_sep|>    main()\n<|arg_sep|>"None"',
        ),
    ],
}


class _Both:
    """Answers as asked (constrained) and also completes the same prompt without the constraint."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.log: list[list[str]] = []
        self.results: list = []

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    async def complete(self, prompt, **kwargs):
        result = await self.inner.complete(prompt, **kwargs)
        free = await self.inner.complete(prompt, **{**kwargs, "constraint": None})
        self.log.append([result.completions[0].text, free.completions[0].text])
        self.results.append(result)
        return result


@pytest.fixture(scope="module")
def client():
    from neural_dap.llm.inprocess import InProcessClient

    return InProcessClient(embedded_model_path())


async def _session(client, name: str):
    program, entry, plan = SESSIONS[name]
    both = _Both(client)
    world = NeuralWorld(both, ModelSettings())
    await world.start(LaunchSpec(program=str(program), entry=entry))
    stops = []
    for step in plan.split():
        stop = await world.act(Action(KIND[step]))
        stops.append(stop)
        if stop.at_end:
            break
    return both, stops, world


@pytest.mark.parametrize("name", sorted(SESSIONS))
async def test_greedy_frames_constrained_and_not_are_the_ones_the_transformers_path_gave(client, name):
    both, _, _ = await _session(client, name)
    assert [tuple(pair) for pair in both.log] == GOLDEN[name]


async def test_a_line_the_program_leaves_no_choice_about_is_written_without_decoding_it(client):
    """Once one candidate line is left, the rest of the frame is the program's, not the model's:
    it is not decoded token by token (the frames are the same: the golden test above)."""
    both, _, _ = await _session(client, "bubble")
    encode = client._tokenizer.encode
    decoded = [(r.generated_tokens, len(encode(r.completions[0].text, add_special_tokens=False))) for r in both.results]
    assert sum(made for made, _ in decoded) < 0.8 * sum(written for _, written in decoded), decoded


def test_a_neural_session_writes_no_warning_on_stderr():
    done = subprocess.run(
        [sys.executable, "-m", "neural_dap", "debug", str(EXAMPLES / "bubble_sort.py"), *NEURAL, "--do", "n"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    noisy = [line for line in done.stderr.splitlines() if "warning" in line.lower() or "Loading" in line]
    assert not noisy, done.stderr


# -- confidence ----------------------------------------------------------------------------------------


async def test_every_predicted_value_and_line_carries_the_probability_the_model_gave_it(client):
    both, stops, world = await _session(client, "bubble")
    for stop in stops:
        assert stop.predicted and stop.line_confidence is not None and 0 < stop.line_confidence <= 1
        if stop.state.terminal:
            assert stop.value_confidence is not None and 0 < stop.value_confidence <= 1
        else:
            assert set(stop.local_confidence) == set(stop.state.locals)
            assert all(0 <= p <= 1 for p in stop.local_confidence.values())
    summary = world.summary()["confidence"]
    assert summary["predictedValues"] > 0 and summary["meanValueConfidence"] is not None
    # each completion says where its tokens start and how likely each was
    completion = both.results[0].completions[0]
    assert len(completion.offsets) == len(completion.logprobs) > 0


async def test_a_value_the_model_loops_on_is_cut_and_shown_as_uncertain(client):
    from neural_dap.core.state import TRUNCATION_MARK
    from neural_dap.dap.presentation import StopView

    # README's first command: in the class body the model writes __doc__ = 'ABcqpppppp...'
    world = NeuralWorld(client, ModelSettings())
    await world.start(LaunchSpec(program=str(EXAMPLES / "inventory.py")))
    cut = None
    for step in "s n n n s n n n".split():
        stop = await world.act(Action(KIND[step]))
        if "__doc__" in stop.state.locals:
            cut = stop
            break
    assert cut is not None
    value = cut.state.locals["__doc__"]
    assert value.endswith(TRUNCATION_MARK) and len(value) < 60  # ended at the loop, not after 160 tokens
    assert cut.local_confidence["__doc__"] == 0.0
    assert world.summary()["confidence"]["cutValues"] == 1
    view = StopView(cut)
    top = {v.name: v for v in view.variables(view.scopes(view.frames[0].id)[0].variables_reference)}
    # (a class body's dunders are among its special variables, as debugpy files them)
    shown = {v.name: v.value for v in view.variables(top["special variables"].variables_reference)}
    assert shown["__doc__"].startswith("\u2248 ") and shown["__doc__"].endswith("?  (p=0.00)")
    assert shown["__module__"] == "'__main__'  (p=0.92)"


def test_confidence_is_the_product_of_the_tokens_that_write_each_part():
    import math

    from neural_dap.format.confidence import frame_confidence
    from neural_dap.llm.base import repeating

    pieces = ["<|line_sep|>", '{"', "a", '": "', "1", '", "', "b", '": "', "..", '"}', "<|action_sep|>", "x = 1\n"]
    probs = [1.0, 0.9, 1.0, 1.0, 0.5, 0.8, 1.0, 1.0, 0.6, 1.0, 1.0, 0.7]
    offsets = tuple(sum(len(p) for p in pieces[:i]) for i in range(len(pieces)))
    got = frame_confidence("".join(pieces), offsets, tuple(math.log(p) for p in probs))
    assert got is not None
    assert got.locals["a"] == pytest.approx(1.0 * 0.5 * 0.8)  # `": "`, `1`, `", "`
    assert got.locals["b"] == pytest.approx(1.0 * 0.6 * 1.0)
    assert got.unchanged == {"b"} and got.line == pytest.approx(0.7)
    cut = frame_confidence("".join(pieces), offsets, tuple(math.log(p) for p in probs), cuts=(offsets[4],))
    assert cut is not None and cut.locals["a"] == 0.0 and cut.cut_locals == {"a"}
    assert repeating([7, 8] + [5] * 32) and repeating([1, 2, 3] * 11) and not repeating(list(range(40)))


def test_a_served_completion_carries_its_token_log_probabilities():
    from neural_dap.llm.openai import _completion

    choice = {
        "text": '<|line_sep|>{"a": "1"}',
        "finish_reason": "stop",
        "logprobs": {"text_offset": [500, 512, 514, 515, 519, 520, 523], "token_logprobs": [-0.1] * 6 + [-0.01]},
    }
    completion = _completion(choice)
    assert completion.offsets == (0, 12, 14, 15, 19, 20)  # the stop token (past the text) left out
    assert completion.logprobs == (-0.1,) * 6
    assert _completion({"text": "x", "finish_reason": "stop"}).logprobs == ()


# -- calibration -----------------------------------------------------------------------------------------


def test_eval_nextstate_json_has_calibration_over_predicted_values(tmp_path, capsys):
    import json

    from neural_dap.cli.main import main

    program = {
        "id": 0,
        "source": "def f(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total\n",
        "entry": "f",
        "args": "[1, 2]",
    }
    (tmp_path / "heldout.jsonl").write_text(json.dumps(program) + "\n")
    code = main(["eval", "nextstate", "--data", str(tmp_path), "--trajectories", "1", "--json", "--quiet"])
    assert code == 0
    result = json.loads(capsys.readouterr().out)
    figures = result["calibration"]  # top level, as the issue asks (the held-out figures here)
    assert figures == result["heldout"]["calibration"]
    assert set(figures) >= {"auroc", "ece", "top_half_accuracy", "values", "accuracy"}
    assert figures["values"] > 0 and 0 <= figures["ece"] <= 1 and 0 <= figures["top_half_accuracy"] <= 1
