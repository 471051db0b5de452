"""The official @vscode/debugadapter-testsupport DebugClient drives neural-dap (tests/node)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from .conftest import ROOT
from .test_failed_predictions import scripted_model

NODE_DIR = ROOT / "tests" / "node"


def test_vscode_debugclient_session(tmp_path):
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    if not (NODE_DIR / "node_modules" / "@vscode" / "debugadapter-testsupport").is_dir():
        pytest.skip("run `npm ci` in tests/node first (scripts/setup.sh does)")
    with scripted_model(tmp_path, []) as url:  # a model that fails every prediction
        result = subprocess.run(
            [node, "--test"],
            cwd=NODE_DIR,
            env={**os.environ, "NEURAL_DAP_PYTHON": sys.executable, "SCRIPTED_MODEL_URL": url},
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "# fail 0" in result.stdout and "# pass 4" in result.stdout
