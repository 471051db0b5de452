"""What-if correctness on CRUXEval functions: change an argument at the call and continue.

For each function of CRUXEval's dev set on its input, a recorded session stops at the call of `f`;
one argument that is an int or a str (else an int or str in a list, tuple or dict argument) gets a
small random change (an int moves by -3..3 or doubles, a str gets a letter inserted, replaced or
removed) through the debugger's what-if branch (the same
path as DAP's setVariable), and the session continues to the end. The branch passes when its result
equals a fresh recording of `f` called with the changed arguments: the same outcome (returned or
raised) and the same value.

  same       the branch gives what the fresh recording gives
  different  it does not (a bug)
  refused    the branch was refused (its reason is counted)
  skipped    no int or str to change, or arguments that are not literals

Run: python benchmarks/what_if.py [--data ../shared/data/cruxeval-dev.jsonl] [--limit N] [--seed S]
The data are for evaluation only.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import string
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from neural_dap.core.calls import call_text
from neural_dap.core.world import Entry, LaunchSpec, WorldError
from neural_dap.debugger import branching
from neural_dap.debugger.core import Debugger
from neural_dap.trace.recorder import Limits, Program, record_async
from neural_dap.world.factory import create_world

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "cruxeval-dev.jsonl"
LIMITS = Limits(max_events=200_000, wall_time=10.0)  # both runs, the branch and the fresh one


@dataclass
class Counts:
    same: int = 0
    different: int = 0
    refused: int = 0
    skipped: int = 0
    reasons: Counter = field(default_factory=Counter)
    differences: list[str] = field(default_factory=list)


def changeable(value: object) -> bool:
    """An int or a str, or a list, tuple or dict holding one."""
    if isinstance(value, (list, tuple)):
        return any(_scalar(item) for item in value)
    if isinstance(value, dict):
        return any(_scalar(item) for item in value.values())
    return _scalar(value)


def _scalar(value: object) -> bool:
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def change(value: object, rng: random.Random) -> object:
    """A small random change of an int or a str (of one of them in a list, tuple or dict)."""
    if isinstance(value, (list, tuple)):
        k = rng.choice([i for i, item in enumerate(value) if _scalar(item)])
        items = list(value)
        items[k] = change(items[k], rng)
        return type(value)(items)
    if isinstance(value, dict):
        key = rng.choice([key for key, item in value.items() if _scalar(item)])
        return {**value, key: change(value[key], rng)}
    if not _scalar(value):
        raise TypeError(type(value).__name__)
    if isinstance(value, int):
        return value * 2 if value and rng.random() < 0.2 else value + rng.choice([-3, -2, -1, 1, 2, 3])
    k = rng.randrange(len(value) + 1)
    letter = rng.choice(string.ascii_letters)
    how = rng.choice(["insert", "replace", "remove"]) if value else "insert"
    if how == "insert":
        return value[:k] + letter + value[k:]
    k = min(k, len(value) - 1)
    return value[:k] + (letter if how == "replace" else "") + value[k + 1 :]


def _literal(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


async def one(row: dict, folder: str, rng: random.Random, counts: Counts) -> None:
    path = os.path.join(folder, f"{row['id']}.py")
    Path(path).write_text(row["code"])
    debugger = Debugger(create_world)
    try:
        launch = LaunchSpec(
            program=path,
            entry=Entry("f", row["input"]),
            source=row["code"],
            options={"limits": {"maxEvents": LIMITS.max_events, "wallTime": LIMITS.wall_time}},
        )
        stop = await debugger.start(launch)
        arguments = dict(stop.stack[0].locals)
        scalars = [name for name, text in arguments.items() if _scalar(_literal(text))]
        choices = scalars or [name for name, text in arguments.items() if changeable(_literal(text))]
        if not choices or call_text(row["code"], arguments) is None:
            counts.skipped += 1
            return
        name = rng.choice(choices)
        new = change(_literal(arguments[name]), rng)
        changed = {**arguments, name: repr(new)}
        call = call_text(row["code"], changed)
        if call is None:
            counts.skipped += 1
            return
        report = await branching.set_value(debugger, 0, name, repr(new))
        if report.failure is not None:
            counts.refused += 1
            counts.reasons[report.failure[:80]] += 1
            return
        while not report.stop.at_end:
            report = await debugger.execute("continue")
        end = report.stop
        ended = getattr(debugger.world, "outcome", None)  # the branch's: how its run ended
        kind = ended.kind if ended is not None else "finished"
        branch = (kind, end.state.value if kind in ("finished", "raised") else None)
        fresh_run = await record_async(
            Program(path=path, source=row["code"], entry="f", entry_args=call, literal_args=True), LIMITS
        )
        outcome = fresh_run.outcome
        value = outcome.value if outcome.kind == "finished" else _exception(fresh_run)
        fresh = (outcome.kind, value if outcome.kind in ("finished", "raised") else None)
        if _same(branch, fresh):
            counts.same += 1
        else:
            counts.different += 1
            counts.differences.append(f"{row['id']}: {name}={new!r}: branch {branch} fresh {fresh}")
    except WorldError as exc:
        counts.refused += 1
        counts.reasons[str(exc)[:80]] += 1
    finally:
        await debugger.close()


def _exception(recording) -> str | None:
    """The exception the fresh run ended by, as the recording's last state shows it."""
    states = recording.states
    return states[-1].value if len(states) else None


def _same(branch: tuple[str, str | None], fresh: tuple[str, str | None]) -> bool:
    if branch[0] != fresh[0]:
        return False
    a, b = _literal(branch[1] or ""), _literal(fresh[1] or "")
    return branch[1] == fresh[1] or (a is not None and a == b)


async def measure(rows: list[dict], seed: int = 0, progress: bool = False) -> Counts:
    rng = random.Random(seed)
    counts = Counts()
    with tempfile.TemporaryDirectory(prefix="neural-dap-what-if-") as folder:
        for k, row in enumerate(rows):
            await one(row, folder, rng, counts)
            if progress and (k + 1) % 25 == 0:
                print(f"  {k + 1}/{len(rows)}: {_line(counts)}", flush=True)
    return counts


def _line(counts: Counts) -> str:
    return f"same {counts.same}, different {counts.different}, refused {counts.refused}, skipped {counts.skipped}"


def load(path: Path, limit: int = 0) -> list[dict]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return rows[:limit] if limit else rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--limit", type=int, default=0, help="the first N functions (default: all)")
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args()
    rows = load(opts.data, opts.limit)
    started = time.monotonic()
    counts = anyio.run(measure, rows, opts.seed, True)
    print(f"{len(rows)} functions in {time.monotonic() - started:.0f} s: {_line(counts)}")
    for reason, n in counts.reasons.most_common():
        print(f"  refused {n}: {reason}")
    for text in counts.differences:
        print(f"  different: {text}")


if __name__ == "__main__":
    main()
