"""Time from `didOpen` to inlay hints in the language server, for a 50-line module with three
functions that declare their entry calls: recorded (real runs), and neural (the embedded model).

Run: python benchmarks/lsp_hints.py [--opens 5] [--neural-opens 3]
The server runs as a subprocess over stdio, driven by pygls' own client, as an editor drives it.
Each open uses a new file name, so nothing is served from the cache; the neural world's first open
includes loading the model, reported apart.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio
from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

MODULE = '''\
"""Small helpers of a shop's back office: three functions, each with the call it is tried on."""

from __future__ import annotations

TAX = 0.2


def mean_gap(values):  # neural-dap: mean_gap([4, 9, 1, 7])
    """The average distance between neighbours once sorted."""
    ordered = sorted(values)
    gaps = []
    for a, b in zip(ordered, ordered[1:]):
        gaps.append(b - a)
    if not gaps:
        return 0
    return sum(gaps) / len(gaps)


def word_counts(text):  # neural-dap: word_counts("a b a c b a")
    """How often each word occurs, and the most common one."""
    counts = {}
    for word in text.split():
        counts[word] = counts.get(word, 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: -kv[1])
    top = ranked[0][0] if ranked else None
    return top, counts


def running_max(xs):  # neural-dap: running_max([3, 1, 4, 1, 5])
    """The largest value seen so far, at each position."""
    best = None
    out = []
    for x in xs:
        if best is None or x > best:
            best = x
        out.append(best)
    return out


def with_tax(price):
    return round(price * (1 + TAX), 2)


if __name__ == "__main__":
    print(mean_gap([4, 9, 1, 7]))
    print(word_counts("a b a c b a"))
    print(running_max([3, 1, 4, 1, 5]))
    print(with_tax(10))
'''


async def open_and_wait(client: LanguageClient, folder: Path, name: str) -> tuple[float, int]:
    path = folder / f"{name}.py"
    path.write_text(MODULE)
    uri = path.as_uri()
    started = time.perf_counter()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=MODULE))
    )
    hints = await client.text_document_inlay_hint_async(
        lsp.InlayHintParams(lsp.TextDocumentIdentifier(uri), lsp.Range(lsp.Position(0, 0), lsp.Position(60, 0)))
    )
    return time.perf_counter() - started, len(hints or [])


async def measure(world: str, opens: int) -> list[tuple[float, int]]:
    client = LanguageClient("neural-dap-benchmark", "1")

    @client.feature(lsp.WORKSPACE_INLAY_HINT_REFRESH)
    def refresh(params: None) -> None:
        return None

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        return None

    await client.start_io(sys.executable, "-m", "neural_dap.cli.main", "lsp")
    caps = lsp.ClientCapabilities(
        text_document=lsp.TextDocumentClientCapabilities(inlay_hint=lsp.InlayHintClientCapabilities())
    )
    await client.initialize_async(
        lsp.InitializeParams(
            capabilities=caps,
            # the files are the benchmark's own, in a temp folder: trusted, so the server runs them unasked
            initialization_options={"world": world, "maxPredictions": 40, "trustedWorkspace": True},
        )
    )
    client.initialized(lsp.InitializedParams())
    results = []
    with tempfile.TemporaryDirectory(prefix="neural-dap-lsp-bench-") as folder:
        for k in range(opens):
            results.append(await open_and_wait(client, Path(folder), f"shop{k}"))
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return results


def describe(world: str, results: list[tuple[float, int]], first_apart: bool) -> str:
    times = [t for t, _ in results]
    hints = results[-1][1]
    if first_apart and len(times) > 1:
        rest = times[1:]
        return (
            f"{world:>8}: first open {times[0] * 1000:8.0f} ms (model load included); "
            f"then median {statistics.median(rest) * 1000:7.0f} ms over {len(rest)} opens; {hints} hints"
        )
    return (
        f"{world:>8}: median {statistics.median(times) * 1000:7.0f} ms over {len(times)} opens "
        f"(min {min(times) * 1000:.0f}, max {max(times) * 1000:.0f}); {hints} hints"
    )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opens", type=int, default=5)
    parser.add_argument("--neural-opens", type=int, default=3)
    opts = parser.parse_args()
    print(f"didOpen -> inlay hints, {len(MODULE.splitlines())}-line module, three entry calls")
    recorded = await measure("recorded", opens=opts.opens)
    print(describe("recorded", recorded, first_apart=False))
    if opts.neural_opens:
        neural = await measure("neural", opens=opts.neural_opens)
        print(describe("neural", neural, first_apart=True))
        ratio = statistics.median([t for t, _ in neural[1:] or neural]) / statistics.median([t for t, _ in recorded])
        print(f"neural / recorded (warm): {ratio:.1f}x")


if __name__ == "__main__":
    anyio.run(main)
