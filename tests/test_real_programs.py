"""Real programs not written here (issue 21), debugged the way their users debug them: the `fast`
subset of `benchmarks/real_programs.py`, through the benchmark's own functions.

Each program launches through a real adapter over stdio, stops at its `# breakpoint` line, runs to
its end with the plain run's stdout, and (where debugpy can debug it) agrees with a real debugpy
session stop by stop for the benchmark's stepping plan. A check a program is known to fail today is
listed with what is missing in the program's `known` entry (the benchmark's table shows it) and is
not asserted here; every other check is.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parent.parent / "benchmarks" / "real_programs.py"
_spec = importlib.util.spec_from_file_location("neural_dap_real_programs", _PATH)
assert _spec is not None and _spec.loader is not None
real_programs = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = real_programs  # (dataclasses look their module up)
_spec.loader.exec_module(real_programs)

SLOW = {"logs-re", "json-csv", "attrs"}  # their stepping plans run the longest (6 to 8 s each)
FAST = [
    pytest.param(p, id=p.name, marks=[pytest.mark.slow] if p.name in SLOW else [])
    for p in real_programs.PROGRAMS
    if p.fast
]


def test_the_corpus_is_what_issue_21_asks_for():
    programs = real_programs.PROGRAMS
    assert len(programs) >= 15
    assert len({p.name for p in programs}) == len(programs)
    for program in programs:
        assert program.line > 0  # each driver marks its breakpoint line
        for check, why in program.known:
            assert check in ("breakpoint", "end", "output", "agreement") and why
    assert 6 <= len(FAST) <= 8


@pytest.mark.parametrize("program", FAST)
async def test_real_program(program):
    result = await real_programs.run_program(program, limit=90.0)
    known = dict(program.known)  # check -> what neural-dap lacks today (see the benchmark's PROGRAMS)
    context = f"{program.name}: {result.error or ''} first stop {result.first_stop!r}; {result.disagreements}"
    assert result.plain_rc is not None, f"{program.name}: the plain run did not finish"
    assert result.launched, context
    assert not result.error, context
    assert result.events and result.events > 0, context
    if "breakpoint" not in known:
        assert result.breakpoint_hit, context
    if "end" not in known:
        assert result.ended, context
    if "output" not in known:
        assert result.recorded_stdout == result.plain_stdout, context
    if program.comparable and "agreement" not in known:
        assert result.compared >= 3, context
        assert result.agreed == result.compared, context
