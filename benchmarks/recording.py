"""Recording overhead: a traced run vs. a plain run of the same program, and bytes per event.

Run: python benchmarks/recording.py [--python PATH ...] [--repeat N]
Both runs happen in a fresh child process of the same interpreter; the plain run executes the
program without a tracer (`python -c`), the traced one through `neural_dap.trace.recorder.record`.
Timings are wall-clock medians over --repeat runs, interpreter start-up subtracted from both.
"slowdown" is the recording itself (the compact event log, indexed lazily); "+index" adds indexing
every event, which a debugging session does on its first use.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from neural_dap.trace.recorder import Limits, Program, record  # noqa: E402

PROGRAMS = {
    "loop": (
        textwrap.dedent(
            """
            def work(n):
                total = 0
                for i in range(n):
                    total += i * i % 7
                return total
            """
        ),
        "work",
        "60000",
    ),
    "recursion": (
        textwrap.dedent(
            """
            def fib(n):
                if n < 2:
                    return n
                return fib(n - 1) + fib(n - 2)
            """
        ),
        "fib",
        "19",
    ),
    "lists": (
        textwrap.dedent(
            """
            def bubble(xs):
                xs = list(xs)
                for i in range(len(xs)):
                    for j in range(len(xs) - 1 - i):
                        if xs[j] > xs[j + 1]:
                            xs[j], xs[j + 1] = xs[j + 1], xs[j]
                return xs
            """
        ),
        "bubble",
        "list(range(120, 0, -1))",
    ),
}


def plain_seconds(python: str, path: Path, func: str, args: str) -> float:
    code = (
        "import time, runpy\n"
        f"ns = runpy.run_path({str(path)!r})\n"
        f"args = eval({('(' + args + ',)')!r}, ns)\n"
        "t = time.perf_counter()\n"
        f"ns[{func!r}](*args)\n"
        "print(time.perf_counter() - t)\n"
    )
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def startup_seconds(python: str, path: Path, func: str) -> float:
    """A traced run of a function that returns at once: the fixed cost of a recording."""
    t = time.perf_counter()
    record(Program(str(path), source=f"def {func}(*a):\n    return 0\n", entry=func), python=python)
    return time.perf_counter() - t


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", action="append", help="interpreters to measure (default: this one)")
    parser.add_argument("--repeat", type=int, default=5)
    opts = parser.parse_args()
    pythons = opts.python or [sys.executable]
    limits = Limits(max_events=5_000_000, wall_time=120)
    print(f"{'python':>8} {'engine':>10} {'program':>10} {'events':>9} {'plain ms':>9} {'traced ms':>10} {'slowdown':>9} {'+index':>8} {'B/event':>8} {'ns/event':>9}")
    with tempfile.TemporaryDirectory() as tmp:
        for python in pythons:
            for name, (source, func, args) in PROGRAMS.items():
                path = Path(tmp) / f"{name}.py"
                path.write_text(source)
                base = statistics.median(startup_seconds(python, path, func) for _ in range(3))
                plain = statistics.median(plain_seconds(python, path, func, args) for _ in range(opts.repeat))
                traced, indexed = [], []
                for _ in range(opts.repeat):
                    t = time.perf_counter()
                    rec = record(Program(str(path), entry=func, entry_args=args), limits, python=python)
                    traced.append(time.perf_counter() - t - base)
                    len(rec.states)  # index every event, as a debugger session does on first use
                    indexed.append(time.perf_counter() - t - base)
                    assert rec.outcome.kind == "finished", (name, rec.outcome)
                t_traced = statistics.median(traced)
                t_indexed = statistics.median(indexed)
                events = len(rec.states)
                print(
                    f"{rec.python:>8} {rec.engine:>10} {name:>10} {events:>9} {plain * 1e3:>9.1f} {t_traced * 1e3:>10.1f}"
                    f" {t_traced / plain:>8.1f}x {t_indexed / plain:>7.1f}x {rec.wire_bytes / events:>8.1f} {t_traced / events * 1e9:>9.0f}"
                )


if __name__ == "__main__":
    main()
