"""Forward stops and local values agree with a real debugpy session, step for step.

For each example program and each stepping plan, the same commands go to `python -m debugpy.adapter`
and to neural-dap (recorded world), both through a real DAP client; every stop must be at the same
function and line with the same locals, and a return shown in the caller must show the same value.
"""

from __future__ import annotations

import pytest

from neural_dap.reality.debugpy_peer import DebugpyPeer

from .conftest import EXAMPLES
from .dap_helpers import adapter, start, step, where

PLANS = {
    "step-in": ["stepIn"] * 150,
    "next": ["stepIn"] * 6 + ["next"] * 60,
    "mixed": (["stepIn"] * 4 + ["stepOut"] + ["next"] * 3 + ["stepIn"] * 2) * 12,
}
RUNNABLE = sorted(p.name for p in EXAMPLES.glob("*.py") if "missing" not in p.name)


def _comparable(local: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Plain locals, and return values (debugpy shows an exception exit as `(return) f: None`).
    Dunder names (a class body's `__module__`, `__qualname__`) and functions, classes and modules
    (a class body's methods) are left out: debugpy files them under "special variables",
    "function variables" and "class variables" groups that the peer does not open."""
    grouped = ("<function ", "<class ", "<module ")
    plain = {
        k: v
        for k, v in local.items()
        if not k.startswith("(") and not (k.startswith("__") and k.endswith("__")) and not v.startswith(grouped)
    }
    pseudo = {k: v for k, v in local.items() if k.startswith("(return) ")}
    return plain, pseudo


@pytest.mark.slow
@pytest.mark.parametrize("plan", sorted(PLANS))
@pytest.mark.parametrize("example", RUNNABLE)
async def test_neural_dap_stops_where_debugpy_stops(example, plan):
    path = str(EXAMPLES / example)
    peer = DebugpyPeer(path)
    compared = 0
    try:
        real = await peer.start()
        async with adapter() as c:
            await start(c, {"program": path, "stopOnEntry": True})
            for k, command in enumerate([None, *PLANS[plan]]):
                if command is not None:
                    real = await peer.step(command)
                    if real is None:
                        break
                    _reason, ours = await step(c, command)
                else:
                    ours = await where(c)
                name, line, local = ours
                plain, pseudo = _comparable(local)
                where_ = f"after {k} {plan} commands"
                assert (name, line) == (real.function, real.line), (
                    f"{where_}: neural-dap at {name}:{line}, debugpy at {real.function}:{real.line}"
                )
                assert plain == real.locals, f"{where_} at {name}:{line}"
                returns = {
                    f"(return) {k.split(' ', 1)[1].rsplit('.', 1)[-1]}": v for k, v in real.returns.items()
                }  # Class.method
                for key, value in pseudo.items():
                    assert returns.get(key) == value, f"{where_}: {key}"
                compared += 1
    finally:
        await peer.close()
    assert compared >= 5  # (a plan that steps out of module code ends the program early)
