"""The recording child runs the program as the program would run by itself: `python -m` launches,
the standard streams it sees, the processes it starts, values whose repr hangs, no orphans."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from neural_dap.trace.recorder import Limits, Program, record, record_skeleton

from .test_recorder import _python

VERSIONS = ["3.11", "3.12", "3.13"]


def _interpreter(version: str) -> str | None:
    if sys.version.startswith(version):
        return None  # this one
    found = _python(version)
    if found is None:
        pytest.skip(f"no Python {version} here")
    return found


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _all_states(rec) -> list:
    return [rec.state(i) for i in range(len(rec))]


# -- 1. module launches ------------------------------------------------------------------------------


def test_a_module_launch_runs_as_python_dash_m_and_traces_the_working_folder(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/__main__.py": """
                import sys
                from pkg import helper
                print(sys.argv[1:], sys.argv[0], sys.path[0], __name__, __package__, __spec__.name)
                print(helper.double(21))
            """,
            "pkg/helper.py": """
                def double(x):
                    y = x * 2
                    return y
            """,
        },
    )
    plain = subprocess.run(
        [sys.executable, "-m", "pkg", "a", "b"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    program = Program(path=str(tmp_path), module="pkg", argv=("a", "b"), cwd=str(tmp_path))
    full = record(program)
    assert full.outcome.kind == "finished", full.outcome
    assert full.stdout == plain
    main = str(tmp_path / "pkg" / "__main__.py")
    assert full.main_path == main
    assert set(full.sources) == {main, str(tmp_path / "pkg" / "helper.py")}
    assert ("double", 3) in [(s.function, s.line) for s in full.states]
    skeleton = record_skeleton(program)
    try:
        assert skeleton.outcome.kind == "finished"
        assert skeleton.main_path == main
        assert skeleton.stdout == plain
        assert [(s.function, s.line, s.locals) for s in _all_states(skeleton)] == [
            (s.function, s.line, s.locals) for s in full.states
        ]
    finally:
        skeleton.close()


def test_a_pytest_module_launch_traces_the_tests_not_pytest(tmp_path):
    _write(
        tmp_path,
        {
            "test_x.py": """
                from mine import square

                def test_square():
                    value = square(3)
                    assert value == 9
            """,
            "mine.py": """
                def square(n):
                    return n * n
            """,
        },
    )
    program = Program(
        path=str(tmp_path), module="pytest", argv=("-q", "-p", "no:cacheprovider", "test_x.py"), cwd=str(tmp_path)
    )
    skeleton = record_skeleton(program, Limits(wall_time=30))
    try:
        assert skeleton.outcome.kind == "exited" and skeleton.outcome.exit_code == 0, skeleton.outcome
        assert "1 passed" in skeleton.stdout
        assert skeleton.main_path.endswith(os.path.join("pytest", "__main__.py"))
        states = _all_states(skeleton)
        assert {s.path for s in states} == {str(tmp_path / "test_x.py"), str(tmp_path / "mine.py")}
        assert any(s.function == "test_square" and s.locals.get("value") == "9" for s in states)
    finally:
        skeleton.close()


def test_a_missing_module_is_an_error_as_python_dash_m_says_it(tmp_path):
    rec = record(Program(path=str(tmp_path), module="no_such_module_here", cwd=str(tmp_path)))
    assert rec.outcome.kind == "error"
    assert "No module named no_such_module_here" in rec.outcome.message
