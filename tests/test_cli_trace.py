"""`neural-dap trace`: the command a user runs to see what the recorder sees."""

from __future__ import annotations

import json
import subprocess
import sys

from .conftest import EXAMPLES


def neural_dap(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "neural_dap", *args], capture_output=True, text=True, timeout=60)


def test_json_output_has_one_object_per_state_with_the_documented_keys():
    out = neural_dap("trace", str(EXAMPLES / "recursion.py"), "--entry", "factorial", "--args", "3")
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert {"event", "line", "source", "function", "depth", "locals", "value"} <= set(rows[0])
    assert rows[0] == {
        **rows[0],
        "event": "call",
        "function": "factorial",
        "depth": 0,
        "locals": {"n": "3"},
        "value": None,
    }
    assert rows[-1]["event"] == "return" and rows[-1]["value"] == "6"
    assert max(r["depth"] for r in rows) == 2
    assert "the program finished" in out.stderr


def test_script_with_arguments_and_trace_text_output(tmp_path):
    prog = tmp_path / "echo.py"
    prog.write_text("import sys\nwords = sys.argv[1:]\nn = len(words)\n")
    out = neural_dap("trace", str(prog), "--format", "cwm", "--", "a", "--b")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("<|begin_of_text|><|trace_context_start|>")
    assert "{\"words\": \"['a', '--b']\"}" in out.stdout
    assert out.stdout.rstrip().endswith("<|end_of_text|>")


def test_a_missing_program_is_a_clear_error_not_a_traceback():
    out = neural_dap("trace", "/no/such/file.py")
    assert out.returncode == 2
    assert "no such program" in out.stderr and "Traceback" not in out.stderr
