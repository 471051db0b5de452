"""The README's Emacs configurations in a real batch Emacs with the real clients (tests/emacs/*.el
drive them as a user would): dape and dap-mode, each debugging a file in a subfolder of a project,
with a breakpoint set before the launch, steps, the README's step back and reverse continue
commands, a conditional breakpoint and evaluate.

The blocks run are the README's own (marked `emacs-dape` and `emacs-dap-mode`), the adapter's path
replaced by this checkout's. Emacs and dap-mode come from Debian (scripts/setup-e2e.sh: Emacs 30.1
from bookworm-backports, `elpa-dap-mode` 0.7); dape (29.1+) is on GNU ELPA, which the registries here
do not include: the test runs where a checkout of it is at $NEURAL_DAP_DAPE or .e2e/dape (setup-e2e.sh
clones tag 0.27.1 where GitHub can be reached). Each part skips, saying why, where its editor or
client is missing. Checked with Emacs 30.1, dape 0.27.1 and dap-mode 0.7.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, SQUARES_PROGRAM, adapters_in
from .markdown_blocks import blocks

PLACEHOLDER = "/path/to/neural-dap/.venv/bin/neural-dap"

# Both clients, on the same program and actions, stop where nvim-dap does (tests/test_nvim_dap.py),
# with the breakpoint set before the launch hit on the way to the end.
STOPS = [
    ("launch", "entry", "<module>", 1),
    ("step over", "step", "<module>", 6),
    ("step over", "step", "<module>", 14),
    ("step into", "step", "main", 7),
    ("step over", "step", "main", 8),
    ("step over", "step", "main", 9),
    ("step into", "step", "square", 2),
    ("step back", "step", "main", 9),  # out of the call, to the line that made it
    ("step back", "step", "main", 8),
    ("continue", "breakpoint", "square", 2),  # the conditional breakpoint x == 3
    ("reverse continue", "entry", "<module>", 1),  # no earlier hit: back to the start
    ("continue", "breakpoint", "square", 2),
    ("continue", "breakpoint", "main", 10),  # the breakpoint set before the launch
    ("continue", "end", "<module>", 14),  # the end of the program is a stop of its own
]


def _emacs_version() -> tuple[int, int] | None:
    emacs = shutil.which("emacs")
    if emacs is None:
        return None
    out = subprocess.run([emacs, "--version"], capture_output=True, text=True, timeout=30).stdout
    match = re.match(r"GNU Emacs (\d+)\.(\d+)", out)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _dape() -> Path | None:
    where = Path(os.environ.get("NEURAL_DAP_DAPE", ROOT / ".e2e" / "dape"))
    return where if (where / "dape.el").is_file() else None


def _has_dap_mode() -> bool:
    emacs = shutil.which("emacs")
    run = subprocess.run(
        [str(emacs), "--batch", "-q", "--eval", "(require 'dap-mode)"], capture_output=True, text=True, timeout=120
    )
    return run.returncode == 0


def _readme_block(kind: str) -> str:
    (block,) = [b for b in blocks(ROOT / "README.md") if b.kind == kind]
    assert block.text.count(PLACEHOLDER) == 1, f"{block.where()}: the adapter's path, once"
    return block.text.replace(PLACEHOLDER, str(Path(sys.executable).with_name("neural-dap")))


def _project(tmp_path: Path) -> Path:
    """A git project whose program is in a subfolder, as a user's is."""
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    program = project / "src" / "loop.py"
    program.write_text(SQUARES_PROGRAM)
    return program


def _drive(script: str, config: str, tmp_path: Path, env: dict[str, str]) -> dict:
    program = _project(tmp_path)
    (tmp_path / "config.el").write_text(config)
    out = tmp_path / "seen.json"
    run = subprocess.run(
        [str(shutil.which("emacs")), "--batch", "-q", "-l", str(ROOT / "tests" / "emacs" / script)],
        cwd=program.parent,  # Emacs started in the subfolder, as from a shell there
        env={
            **os.environ,
            **env,
            "ND_CONFIG": str(tmp_path / "config.el"),
            "ND_PROGRAM": str(program),
            "ND_OUT": str(out),
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.is_file(), (run.stdout + run.stderr)[-3000:]
    seen = json.loads(out.read_text())
    assert seen["errors"] == [], (seen, (run.stdout + run.stderr)[-3000:])
    assert adapters_in(tmp_path) == [], "the adapter outlived the session"
    # the launch names the program from the project's root, which is where it runs
    project = str(program.parent.parent)
    assert seen["launch"]["cwd"].rstrip("/") == project
    assert os.path.join(project, seen["launch"]["program"]) == str(program)
    return seen


def _stops(seen: dict) -> list[tuple]:
    return [(s["after"], s["reason"], s["name"], s["line"]) for s in seen["stops"]]


def test_dape_as_the_readme_configures_it(tmp_path):
    version, dape = _emacs_version(), _dape()
    if version is None:
        pytest.skip("needs Emacs on PATH (scripts/setup-e2e.sh installs Emacs 30.1 from Debian's bookworm-backports)")
    if version < (29, 1):
        pytest.skip(f"dape needs Emacs 29.1+, this is Emacs {version[0]}.{version[1]}")
    if dape is None:
        pytest.skip("needs a dape checkout at $NEURAL_DAP_DAPE or .e2e/dape (scripts/setup-e2e.sh clones dape 0.27.1)")
    seen = _drive("dape_session.el", _readme_block("emacs-dape"), tmp_path, {"ND_DAPE": str(dape)})
    names = {"N": "step back", "C": "reverse continue"}  # the README's keys in dape's map
    assert [(names.get(a, a), *rest) for a, *rest in _stops(seen)] == STOPS
    assert seen["evaluate"] == "30"  # x * 10 at the hit where x == 3
    assert "total 14\n" in seen["output"]  # in dape's REPL, among its own lines
    assert seen["ended"] is True


def test_dap_mode_as_the_readme_configures_it_without_dap_ui(tmp_path):
    if _emacs_version() is None:
        pytest.skip("needs Emacs on PATH (scripts/setup-e2e.sh installs it and dap-mode from Debian)")
    if not _has_dap_mode():
        pytest.skip("needs dap-mode (Debian: apt-get install elpa-dap-mode; scripts/setup-e2e.sh installs it)")
    seen = _drive("dap_mode_session.el", _readme_block("emacs-dap-mode"), tmp_path, {})
    assert _stops(seen) == STOPS
    assert seen["evaluate"] == "30"
    assert seen["output"] == "total 14\n"
    assert seen["ended"] is True
