"""What `subProcess: true` costs, side by side: a program that starts Python children (four scripts
through `subprocess.run`, then a multiprocessing pool of two workers), run plainly, recorded with
its children unrecorded (the default), and recorded with each child recording itself.

Run: python benchmarks/child_processes.py [--repeat N] [--work N] [--method spawn|fork|forkserver]
Wall-clock medians over --repeat runs; "recorded" is `record_skeleton` from start to the program's
end (the recording child's start-up included), as a launch pays it.
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

from neural_dap.trace.children import list_children, new_children_folder, open_child
from neural_dap.trace.recorder import Program, record_skeleton

CHILD = textwrap.dedent(
    """\
    import sys

    total = 0
    for i in range(int(sys.argv[1])):
        total += i * i % 7
    print(total)
    """
)
PARENT = textwrap.dedent(
    """\
    import multiprocessing as mp
    import os
    import subprocess
    import sys


    def work(n):
        total = 0
        for i in range(n):
            total += i * i % 7
        return total


    if __name__ == "__main__":
        n, method = int(sys.argv[1]), sys.argv[2]
        here = os.path.dirname(os.path.abspath(__file__))
        for _ in range(4):
            subprocess.run([sys.executable, os.path.join(here, "child.py"), str(n)], check=True, capture_output=True)
        mp.set_start_method(method)
        with mp.Pool(2) as pool:
            print(sum(pool.map(work, [n // 8] * 8)))
    """
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work", type=int, default=20_000, help="loop passes per child script")
    parser.add_argument("--method", default="fork", choices=["spawn", "fork", "forkserver"])
    opts = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="neural-dap-bench-children-"))
    (folder / "child.py").write_text(CHILD)
    parent = folder / "parent.py"
    parent.write_text(PARENT)
    argv = (str(opts.work), opts.method)

    def plain() -> float:
        started = time.perf_counter()
        subprocess.run([sys.executable, str(parent), *argv], check=True, capture_output=True)
        return time.perf_counter() - started

    def recorded(children: bool) -> tuple[float, int, int]:
        where = new_children_folder() if children else None
        started = time.perf_counter()
        rec = record_skeleton(Program(str(parent), argv=argv, cwd=str(folder), children=where))
        seconds = time.perf_counter() - started
        assert rec.outcome.ok, rec.outcome
        rec.close()
        found = list_children(where) if where else []
        events = sum(len(open_child(child.events).states) for child in found)
        return seconds, len(found), events

    plains = [plain() for _ in range(opts.repeat)]
    without = [recorded(False)[0] for _ in range(opts.repeat)]
    with_children = [recorded(True) for _ in range(opts.repeat)]
    base = statistics.median(plains)
    rows = [
        ("plain run", base, "", ""),
        ("recorded, children unrecorded", statistics.median(without), "", ""),
        (
            "recorded, subProcess: every child records itself",
            statistics.median(r[0] for r in with_children),
            str(with_children[-1][1]),
            str(with_children[-1][2]),
        ),
    ]
    print(f"Python {sys.version.split()[0]}, start method {opts.method}, {opts.work} passes per child script")
    print("| run | seconds | vs plain | child recordings | their events |")
    print("|---|---|---|---|---|")
    for name, seconds, count, events in rows:
        print(f"| {name} | {seconds:.2f} | {seconds / base:.1f}x | {count} | {events} |")


if __name__ == "__main__":
    main()
