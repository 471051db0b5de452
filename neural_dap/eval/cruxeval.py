"""CRUXEval-O and CRUXEval-I through the debugger.

Output prediction: start at the call `f(<input>)` and either `continue` (one jump to the return) or
step into until the function returns; the predicted return value passes when it equals the expected
output as a Python literal (both are parsed with `ast.literal_eval`; model text is never executed).

Input prediction: start at the return of `f` with the output and step back to the call
(`inv_step_return`); the call's locals are the predicted arguments. They pass when running `f` on
them (in the recorder's child process, with limits) returns the output. Only arguments that are
Python literals are passed to `f`: anything else fails the item.

The recorded world is the reference: it runs f on the real input (O), and steps back from the real
end to the call (I). It fails only where the rules above do: an execution longer than the step
budget (O), or an input that is not a literal, such as a lambda (I).
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from neural_dap.core.actions import Action
from neural_dap.core.calls import call_text, same_literal
from neural_dap.core.world import Entry, LaunchSpec, WorldError
from neural_dap.trace.recorder import Limits, Program, record_async


@dataclass
class Item:
    id: str
    passed: bool
    predicted: str | None
    expected: str
    error: str | None = None
    steps: int = 0
    seconds: float = 0.0


async def run(
    rows: list[dict],
    make_world: Callable[[], Any],
    mode: str,
    method: str = "step",
    max_steps: int = 200,
    progress: Callable[[Item], None] | None = None,
) -> list[Item]:
    items = []
    with tempfile.TemporaryDirectory(prefix="neural-dap-cruxeval-") as tmp:
        for row in rows:
            path = os.path.join(tmp, f"{row['id']}.py")
            with open(path, "w") as fh:
                fh.write(row["code"])
            started = time.monotonic()
            world = make_world()
            try:
                item = await (
                    _output(row, path, world, method, max_steps) if mode == "output" else _input(row, path, world)
                )
            except WorldError as exc:
                item = Item(row["id"], False, None, row["output"] if mode == "output" else row["input"], error=str(exc))
            finally:
                await world.close()
            item.seconds = time.monotonic() - started
            items.append(item)
            if progress is not None:
                progress(item)
    return items


async def _output(row: dict, path: str, world, method: str, max_steps: int) -> Item:
    stop = await world.start(LaunchSpec(program=path, entry=Entry("f", row["input"]), source=row["code"]))
    steps = 0
    if method == "jump":
        stop = await world.act(Action("continue"))
        steps = 1
    else:
        while not stop.at_end and steps < max_steps:
            stop = await world.act(Action("step_into"))
            steps += 1
    predicted = stop.state.value if stop.at_end and stop.state.event == "return" else None
    error = None if stop.at_end else f"no return within {max_steps} steps"
    return Item(row["id"], same_literal(predicted, row["output"]), predicted, row["output"], error, steps)


async def _input(row: dict, path: str, world) -> Item:
    if getattr(world, "name", "") == "recorded":
        # the reference: a real run from the true input, stepped back from its end to the call
        stop = await world.start(LaunchSpec(program=path, entry=Entry("f", row["input"]), source=row["code"]))
        stop = await world.act(Action("continue"))
    else:
        stop = await world.start(LaunchSpec(program=path, entry=Entry("f", returns=row["output"]), source=row["code"]))
    stop = await world.act(Action("inv_step_return"))
    if stop.state.event != "call":
        return Item(row["id"], False, None, row["input"], "stepping back did not reach the call", 1)
    args = call_text(row["code"], stop.state.locals)
    if args is None:
        return Item(
            row["id"], False, str(stop.state.locals), row["input"], "the predicted arguments are not all literals", 1
        )
    rec = await record_async(
        Program(path, source=row["code"], entry="f", entry_args=args, literal_args=True),
        Limits(wall_time=3.0, max_events=100_000),
    )
    passed = rec.outcome.kind == "finished" and same_literal(rec.return_value, row["output"])
    return Item(
        row["id"],
        passed,
        args,
        row["input"],
        None if passed else f"f({args}) gave {rec.return_value or rec.outcome.describe()}",
        1,
    )


def pass_at_1(items: list[Item]) -> float:
    return round(100 * sum(i.passed for i in items) / len(items), 2) if items else 0.0
