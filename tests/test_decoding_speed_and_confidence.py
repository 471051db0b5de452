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
