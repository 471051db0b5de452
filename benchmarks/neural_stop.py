"""Per-stop cost of the neural world model over a 100-step session: prompt tokens, generated tokens,
recomputed (not cached) prompt tokens and latency, in-process (transformers, CPU) and vLLM-served.

Run: python benchmarks/neural_stop.py [--steps 100] [--model DIR] [--vllm URL | --start-vllm]
The session steps into bubble_sort([5, 2, 4, 1, 3]) with the embedded model (`nd` dialect), with
program-aware decoding and without it (the model alone), side by side: latency per stop and per
generated token. With a vLLM server, also the old way of constraining a served model (the plain
request, then refused frames made again segment by segment) and both ways on the same prompts.
Targets (issue 25): constrained within 1.3x of unconstrained, <= 100 ms median per stop in
process; vLLM constrained within 1.5x of its unconstrained run.
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


async def session(client, steps: int, constrained: bool = True) -> dict:
    world = NeuralWorld(client, ModelSettings(constrained=constrained))
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
    summary["errors"] = errors
    return summary


class Paired:
    """A client that answers each (constrained) request as asked, then times the model alone on the
    same prompt: constrained against unconstrained decoding of the very same session."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.pairs: list[tuple[float, int, float, int]] = []

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    async def complete(self, prompt, **kwargs):
        # which goes first alternates: the second finds the prompt cached (KV cache, prefix cache)
        if len(self.pairs) % 2:
            result = await self.inner.complete(prompt, **kwargs)
            free = await self.inner.complete(prompt, **{**kwargs, "constraint": None})
        else:
            free = await self.inner.complete(prompt, **{**kwargs, "constraint": None})
            result = await self.inner.complete(prompt, **kwargs)
        self.pairs.append((result.seconds, result.generated_tokens, free.seconds, free.generated_tokens))
        return result


def describe_pairs(name: str, pairs: list[tuple[float, int, float, int]]) -> None:
    if not pairs:
        return
    constrained = statistics.median(p[0] for p in pairs)
    free = statistics.median(p[2] for p in pairs)
    per_token = statistics.median(p[0] / p[1] for p in pairs if p[1]) / statistics.median(
        p[2] / p[3] for p in pairs if p[3]
    )
    print(
        f"{name:<30} calls {len(pairs):>4}  constrained {constrained * 1e3:6.0f} ms  "
        f"unconstrained {free * 1e3:6.0f} ms (medians)  ratio {constrained / free:4.2f}x per call, "
        f"{per_token:4.2f}x per token  (generated {statistics.median(p[1] for p in pairs):.0f} vs "
        f"{statistics.median(p[3] for p in pairs):.0f} tokens)"
    )


def describe(name: str, summary: dict) -> None:
    stops = [s for s in summary["perStop"] if not s["lookup"] and s["modelCalls"]]
    if not stops:
        print(f"{name}: no predicted stops")
        return

    def med(key: str) -> float:
        values = [s[key] for s in stops if s[key] is not None]
        return statistics.median(values) if values else float("nan")

    per_token = statistics.median(s["seconds"] / s["generatedTokens"] for s in stops if s["generatedTokens"])
    print(
        f"{name:<30} stops {len(stops):>4}  prompt {med('promptTokens'):7.0f}  "
        f"generated {med('generatedTokens'):5.0f}  "
        f"recomputed {med('recomputedTokens'):6.0f}  latency {med('seconds') * 1e3:7.0f} ms (median)  "
        f"{per_token * 1e3:5.2f} ms/token  "
        f"p95 {sorted(s['seconds'] for s in stops)[int(0.95 * (len(stops) - 1))] * 1e3:7.0f} ms  "
        f"invalid {summary['invalidFrames']}  history restarts {summary['historyRestarts']}"
    )


async def main(opts) -> None:
    model = opts.model or embedded_model_path()
    client = InProcessClient(model)
    results = {
        "in-process (CPU) constrained": await session(client, opts.steps),
        "in-process (CPU) unconstrained": await session(client, opts.steps, constrained=False),
    }
    paired = Paired(client)
    await session(paired, min(opts.steps, 50))
    await client.close()
    url = opts.vllm
    server = None
    if opts.start_vllm:
        from neural_dap.llm.vllm_process import VllmServer

        server = VllmServer(model, Path(tempfile.mkdtemp()))
        server.start()
        url = server.url
    try:
        if url:
            served = OpenAICompatibleClient(url)
            results["vLLM (CPU) constrained"] = await session(served, opts.steps)
            results["vLLM (CPU) unconstrained"] = await session(served, opts.steps, constrained=False)
            # the way constrained requests went before whole-frame regexes: the plain request,
            # then the refused frames made again segment by segment
            by_segments = OpenAICompatibleClient(url, whole_frames=False)
            results["vLLM plain, then by segments"] = await session(by_segments, opts.steps)
            served_pairs = Paired(served)
            await session(served_pairs, min(opts.steps, 50))
            print(f"vLLM whole frames: {served.describe().get('wholeFrames')}")
            await served.close()
            await by_segments.close()
    finally:
        if server is not None:
            server.stop()
    print()
    for name, summary in results.items():
        describe(name, summary)
    describe_pairs("in process, same prompts", paired.pairs)
    if url:
        describe_pairs("vLLM, same prompts", served_pairs.pairs)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--model", help="model folder (default: the embedded model)")
    parser.add_argument("--vllm", help="URL of a running vLLM server serving the same model")
    parser.add_argument("--start-vllm", action="store_true", help="start a vLLM server on the CPU for the run")
    anyio.run(main, parser.parse_args())
