"""Per-stop cost of the neural world model over a 100-step session: prompt tokens, generated tokens,
recomputed (not cached) prompt tokens and latency, in-process (transformers, CPU) and vLLM-served.

Run: python benchmarks/neural_stop.py [--steps 100] [--model DIR] [--vllm URL | --start-vllm]
The session steps into bubble_sort([5, 2, 4, 1, 3]) with the embedded model (`nd` dialect).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from neural_dap.core.actions import Action
from neural_dap.core.world import Entry, LaunchSpec, WorldError
from neural_dap.llm.inprocess import InProcessClient
from neural_dap.llm.openai import OpenAICompatibleClient
from neural_dap.world.factory import embedded_model_path
from neural_dap.world.neural import ModelSettings, NeuralWorld

PROGRAM = str(Path(__file__).resolve().parent.parent / "examples" / "bubble_sort.py")


async def session(client, steps: int) -> dict:
    world = NeuralWorld(client, ModelSettings())
    stop = await world.start(LaunchSpec(program=PROGRAM, entry=Entry("bubble_sort", "[5, 2, 4, 1, 3]")))
    errors = 0
    for _ in range(steps):
        try:
            stop = await world.act(Action("step_into"))
        except WorldError:
            errors += 1
        if stop.at_end:
            stop = await world.start(LaunchSpec(program=PROGRAM, entry=Entry("bubble_sort", "[5, 2, 4, 1, 3]")))
    summary = world.summary()
    await world.close()
    summary["errors"] = errors
    return summary


def describe(name: str, summary: dict) -> None:
    stops = [s for s in summary["perStop"] if not s["lookup"] and s["modelCalls"]]
    if not stops:
        print(f"{name}: no predicted stops")
        return

    def med(key: str) -> float:
        values = [s[key] for s in stops if s[key] is not None]
        return statistics.median(values) if values else float("nan")

    print(
        f"{name:<22} stops {len(stops):>4}  prompt {med('promptTokens'):7.0f}  "
        f"generated {med('generatedTokens'):5.0f}  "
        f"recomputed {med('recomputedTokens'):6.0f}  latency {med('seconds') * 1e3:7.0f} ms (median)  "
        f"p95 {sorted(s['seconds'] for s in stops)[int(0.95 * (len(stops) - 1))] * 1e3:7.0f} ms  "
        f"invalid {summary['invalidFrames']}  history restarts {summary['historyRestarts']}"
    )


async def main(opts) -> None:
    model = opts.model or embedded_model_path()
    results = {"in-process (CPU)": await session(InProcessClient(model), opts.steps)}
    url = opts.vllm
    server = None
    if opts.start_vllm:
        from neural_dap.llm.vllm_process import VllmServer

        server = VllmServer(model, Path(tempfile.mkdtemp()))
        server.start()
        url = server.url
    try:
        if url:
            results["vLLM (CPU)"] = await session(OpenAICompatibleClient(url), opts.steps)
    finally:
        if server is not None:
            server.stop()
    print()
    for name, summary in results.items():
        describe(name, summary)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--model", help="model folder (default: the embedded model)")
    parser.add_argument("--vllm", help="URL of a running vLLM server serving the same model")
    parser.add_argument("--start-vllm", action="store_true", help="start a vLLM server on the CPU for the run")
    anyio.run(main, parser.parse_args())
