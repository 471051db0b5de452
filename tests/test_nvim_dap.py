"""The README's nvim-dap configuration (its block marked `nvim-dap`, as it stands) in a real, headless
Neovim with the real nvim-dap plugin (tests/nvim/dap_session.lua drives it as a user would, keymaps
included).

nvim-dap is not on the package registries: the test runs where a checkout of it is at
$NEURAL_DAP_NVIM_DAP or .e2e/nvim-dap (`git clone https://github.com/mfussenegger/nvim-dap
.e2e/nvim-dap`), and skips otherwise. Checked with nvim-dap 9e848e0 (2026-06-19) and Neovim 0.12-dev.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, SQUARES_PROGRAM, adapters_in, modern_nvim
from .markdown_blocks import blocks

PLACEHOLDER = "/path/to/neural-dap/.venv/bin/neural-dap"


def _nvim_dap() -> Path | None:
    where = Path(os.environ.get("NEURAL_DAP_NVIM_DAP", ROOT / ".e2e" / "nvim-dap"))
    return where if (where / "lua" / "dap.lua").is_file() else None


def test_nvim_dap_as_the_readme_configures_it(tmp_path):
    nvim, plugin = modern_nvim(), _nvim_dap()
    if nvim is None or plugin is None:
        pytest.skip("needs Neovim 0.11+ (dev extra) and an nvim-dap checkout at $NEURAL_DAP_NVIM_DAP or .e2e/nvim-dap")
    neural_dap = Path(sys.executable).with_name("neural-dap")
    (block,) = [b for b in blocks(ROOT / "README.md") if b.kind == "nvim-dap"]  # the README's, as it stands
    assert block.text.count(PLACEHOLDER) == 1
    (tmp_path / "config.lua").write_text(block.text.replace(PLACEHOLDER, str(neural_dap)))
    (tmp_path / "prog.py").write_text(SQUARES_PROGRAM)
    out = tmp_path / "seen.json"
    env = {**os.environ, "ND_NVIM_DAP": str(plugin), "ND_OUT": str(out), "ND_CONFIG": str(tmp_path / "config.lua")}
    script = ROOT / "tests" / "nvim" / "dap_session.lua"
    run = subprocess.run(
        [nvim, "--headless", "--clean", "-u", str(script), "prog.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert out.is_file(), (run.stdout + run.stderr)[-3000:]
    seen = json.loads(out.read_text())
    assert seen["errors"] == []
    stops = [(s["after"], s["reason"], s["name"], s["line"]) for s in seen["stops"]]
    assert stops == [
        ("launch", "entry", "<module>", 1),
        ("step over", "step", "<module>", 6),
        ("step over", "step", "<module>", 14),
        ("step into", "step", "main", 7),
        ("step over", "step", "main", 8),
        ("step over", "step", "main", 9),
        ("step into", "step", "square", 2),
        ("<F7>", "step", "main", 9),  # step back, out of the call to the line that made it
        ("<F7>", "step", "main", 8),
        ("continue", "breakpoint", "square", 2),  # the conditional breakpoint x == 3
        ("<S-F7>", "entry", "<module>", 1),  # reverse continue: no earlier hit, back to the start
        ("continue", "breakpoint", "square", 2),
        ("continue", "end", "<module>", 14),  # the end of the program is a stop of its own
    ]
    assert seen["evaluate"] == "30"  # x * 10 at the hit where x == 3
    assert seen["output"] == "total 14\n"
    assert seen["terminated"] is True
    assert adapters_in(tmp_path) == [], "the adapter outlived the session"
