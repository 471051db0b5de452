"""The package as users install it: `python -m build` makes an sdist and a wheel; the wheel, installed
into a fresh virtual environment (not editable, not from the checkout), debugs an example from the
terminal and serves a DAP session."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from neural_dap.dapwire.client import spawn

from .conftest import EXAMPLES, ROOT
from .dap_helpers import start, step, where
from .test_recorder import _python

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return {"wheel": next(out.glob("*.whl")), "sdist": next(out.glob("*.tar.gz"))}


@pytest.fixture(scope="module")
def installed(built, tmp_path_factory) -> Path:
    """A fresh venv with the wheel and its dependencies from the package index, nothing else."""
    home = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(home)], check=True, timeout=300)
    python = home / "bin" / "python"
    result = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", str(built["wheel"])],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return python


def clean_env() -> dict[str, str]:
    """No path back into the checkout."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "NEURAL_DAP_EMBEDDED_MODEL")}


def test_the_wheel_and_the_sdist_hold_the_package_the_model_and_no_build_debris(built):
    names = zipfile.ZipFile(built["wheel"]).namelist()
    assert "neural_dap/cli/main.py" in names and "neural_dap/trace/child/__main__.py" in names
    assert any(n.startswith("neural_dap/train/embedded/") and n.endswith(".safetensors") for n in names)
    assert "neural_dap/train/embedded/tokenizer.json" in names
    assert not any(n.startswith(("tests/", "neural_dap/tests")) for n in names)
    with tarfile.open(built["sdist"]) as sdist:
        members = sdist.getnames()
    assert any(m.endswith("neural_dap/trace/_ctracer.c") for m in members)
    assert not any(m.endswith(".so") for m in members)  # a binary built here must not travel in the source


def test_the_installed_wheel_debugs_an_example_from_the_terminal(installed, tmp_path):
    program = tmp_path / "bubble_sort.py"
    shutil.copy(EXAMPLES / "bubble_sort.py", program)
    where_from = subprocess.run(
        [str(installed), "-c", "import neural_dap; print(neural_dap.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(),
        check=True,
    ).stdout
    assert where_from.startswith(str(installed.parent.parent)), where_from
    command = [str(installed.with_name("neural-dap")), "debug", str(program), "--entry", "bubble_sort"]
    result = subprocess.run(
        [*command, "--args", "[3, 1, 2]", "--do", "n; n; back; p items; q"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(),
        timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "[3, 1, 2]" in result.stdout and "bubble_sort" in result.stdout


@pytest.mark.parametrize("version", ["3.12", "3.13"])
def test_the_installed_wheels_c_tracer_records_under_a_newer_interpreter(installed, tmp_path, version):
    """One build (the limited API of 3.11) serves a recording child of 3.12 or 3.13: its
    sys.monitoring callbacks are the C tracer's, not the Python engine's."""
    python = _python(version)
    if python is None:
        pytest.skip(f"no python{version} on this machine")
    program = tmp_path / "bubble_sort.py"
    shutil.copy(EXAMPLES / "bubble_sort.py", program)
    neural_dap = str(installed.with_name("neural-dap"))
    command = [neural_dap, "trace", str(program), "--python", python, "--engine", "cmonitoring"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=clean_env(), timeout=120)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    states = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert len(states) > 20 and states[-1]["event"] == "return", result.stdout[-2000:]


async def test_the_installed_wheel_serves_a_dap_session(installed, tmp_path):
    program = tmp_path / "bubble_sort.py"
    shutil.copy(EXAMPLES / "bubble_sort.py", program)
    command = [str(installed), "-m", "neural_dap", "adapter"]
    async with spawn(command, timeout=60, env=clean_env(), cwd=str(tmp_path)) as client:
        stopped = await start(client, {"program": str(program), "stopOnEntry": True})
        assert stopped["body"]["reason"] == "entry"
        _, first, _ = await where(client)
        await step(client, "next")
        await step(client, "stepBack")
        _, back, _ = await where(client)
        assert back == first
        await client.call("disconnect", {})
