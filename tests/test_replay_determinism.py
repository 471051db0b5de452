"""Determinism is a property: a replay from any checkpoint rebuilds every event exactly.

Programs from the corpus generator and the real programs of `benchmarks/real_programs/` are
recorded with a checkpoint every few dozen events (so most states come from a replay that starts
mid-run) and every event is rebuilt: the rebuilt states must equal a full capture's, and no replay
may diverge (a replay reads what the recording read: the journal)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from neural_dap.corpus.programs import generate
from neural_dap.trace import journal, threaded
from neural_dap.trace.execution import FullExecution, SkeletonExecution
from neural_dap.trace.recorder import Limits, Program, record, record_skeleton

pytestmark = pytest.mark.skipif(journal.library() is None, reason="the journal library is built on Linux only")

ROOT = Path(__file__).resolve().parent.parent
LIMITS = Limits(wall_time=60, max_events=2_000_000)
OFTEN = 48  # events between checkpoints: most windows are replayed from the middle of the run
# A generated program makes tens of events; one in some hundreds never ends (the corpus may call a
# doubly recursive helper with a number it doubled in a loop). Such a one is stopped early and left
# out: two recordings stopped by their limits stop at different events (the skeleton, which forks a
# checkpoint every 48 events, at its wall time), and it took this test to 285 s once.
GENERATED_LIMITS = Limits(wall_time=60, max_events=20_000)


def _real_programs():
    spec = importlib.util.spec_from_file_location("real_programs_benchmark", ROOT / "benchmarks" / "real_programs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(min_value=0, max_value=10**6))
def test_generated_programs_rebuild_every_event_as_full_capture_records_it(tmp_path, seed):
    generated = generate(seed)
    path = tmp_path / f"gen_{seed}.py"
    path.write_text(generated.source)
    program = (
        Program(str(path), entry=generated.entry, entry_args=generated.args) if generated.entry else Program(str(path))
    )
    recorded = record(program, GENERATED_LIMITS)
    assume(recorded.outcome.kind in ("finished", "raised"))
    full = FullExecution(recorded)
    skeleton = SkeletonExecution(record_skeleton(program, GENERATED_LIMITS, checkpoint_events=OFTEN))
    try:
        assert len(skeleton) == len(full)
        for i in range(len(full)):
            assert skeleton.state(i) == full.state(i), (seed, i)
        assert skeleton.recording.diverged_at is None
    finally:
        skeleton.close()


def _rebuild_everything(recording) -> int:
    """Every event of a skeleton recording rebuilt (a threaded one joined); returns how many."""
    if recording.log.switched_at is not None:
        joined, _ = threaded.join(recording)
        recording.close()
        return len(joined.states)
    execution = SkeletonExecution(recording)
    try:
        for i in range(len(execution)):
            execution.state(i)
        assert recording.diverged_at is None, recording.divergence_message()
        return len(execution)
    finally:
        execution.close()


REAL = _real_programs()


@pytest.mark.slow
@pytest.mark.parametrize("program", REAL.PROGRAMS, ids=[p.name for p in REAL.PROGRAMS])
def test_real_programs_replay_every_event_from_their_checkpoints(program, tmp_path):
    stdin = None
    if program.stdin is not None:
        stdin = tmp_path / "stdin.txt"
        stdin.write_text(program.stdin)
    launch = Program(
        str(program.path),
        argv=program.args,
        cwd=str(program.workdir),
        env=program.environment,
        module=program.module,
        stdin=str(stdin) if stdin else None,
        trace="mine",
    )
    recording = record_skeleton(launch, LIMITS, checkpoint_events=2000)
    assert recording.outcome.kind in ("finished", "exited"), recording.outcome
    assert _rebuild_everything(recording) > 10


@pytest.mark.parametrize("name", ["json-csv", "argparse", "difflib"])
def test_standard_library_code_replays_with_just_my_code_false(name, tmp_path):
    """The libraries traced too (justMyCode false): their events replay as the program's do."""
    program = next(p for p in REAL.PROGRAMS if p.name == name)
    launch = Program(
        str(program.path), argv=program.args, cwd=str(program.workdir), env=program.environment, trace="all"
    )
    recording = record_skeleton(launch, LIMITS, checkpoint_events=5000)
    assert recording.outcome.kind in ("finished", "exited"), recording.outcome
    assert _rebuild_everything(recording) > 100
