"""`pytest --neural-dap`: each failing test is opened in a time-travel session at its failure."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import FAILING_PYTEST_SUITE


def _pytest(folder: Path, *options: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_calc.py", *options],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=240,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # the suite fails, as it should
    return done.stdout


def test_a_failing_test_opens_at_its_failing_line_with_its_values(tmp_path: Path) -> None:
    (tmp_path / "test_calc.py").write_text(FAILING_PYTEST_SUITE)
    out = _pytest(tmp_path, "--neural-dap", "--neural-dap-do", "p total; back; where")
    session = out.split("neural-dap: time travel at each failure", 1)[1]
    assert "[exception] test_calc.py:7 in test_add" in session
    assert "(nd) p total\n4\n" in session
    assert "test_ok" not in session.split("short test summary")[0]  # only the failing test is debugged


def test_without_a_terminal_the_commands_are_printed(tmp_path: Path) -> None:
    (tmp_path / "test_calc.py").write_text(FAILING_PYTEST_SUITE)
    out = _pytest(tmp_path, "--neural-dap")
    assert "neural_dap debug --run --batch --sandbox --break-on userUnhandled -m pytest" in out
    assert "test_calc.py::test_add" in out


def test_the_plugin_is_inert_without_its_option(tmp_path: Path) -> None:
    (tmp_path / "test_calc.py").write_text(FAILING_PYTEST_SUITE)
    assert "neural-dap" not in _pytest(tmp_path)
