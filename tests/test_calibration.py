"""Issue 40: the confidence shown on a predicted value is a probability of being right.

The fitting is checked on values whose real chance of being right is known (drawn from a model
that says p but is right with probability p**3, over-confident as the raw model is on real code),
and the shipped calibration end to end: a model folder's calibration.json reaches what the
terminal front end shows and what `eval nextstate` reports.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from neural_dap.eval.calibrate import auroc, ece, fit, fit_curve, summary
from neural_dap.format.calibration import Calibration, Curve, calibrate, dump, load
from neural_dap.format.confidence import FrameConfidence
from neural_dap.world.factory import embedded_model_path

from .conftest import EXAMPLES


def _overconfident(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    p = rng.uniform(0, 1, n)
    return p, rng.uniform(0, 1, n) < p**3


def test_a_fitted_curve_makes_an_overconfident_model_honest_on_values_it_was_not_fitted_on():
    rng = np.random.default_rng(0)
    p, right = _overconfident(rng, 4000)
    curve = fit_curve(p, right)
    fresh, truth = _overconfident(rng, 4000)
    shown = np.array([curve(x) for x in fresh])
    assert ece(fresh, truth) > 0.15 and ece(shown, truth) < 0.03
    # a value shown at about 0.8 is right about four times in five
    near = (shown > 0.75) & (shown < 0.85)
    assert near.sum() > 50 and abs(truth[near].mean() - 0.8) < 0.06
    # the ranking is kept: the curve never decreases, so the AUROC barely moves (ties at flat steps)
    assert all(b >= a for a, b in zip(curve.y, curve.y[1:], strict=False))
    assert auroc(shown, truth) == pytest.approx(auroc(fresh, truth), abs=0.01)


def test_a_few_lucky_values_cannot_claim_certainty():
    curve = fit_curve([0.99] * 10, [True] * 10)
    assert curve(0.999) < 0.95  # 10 of 10 right is evidence, not certainty


def test_each_kind_gets_its_own_curve_and_a_rare_kind_the_pooled_one():
    rng = np.random.default_rng(1)
    p, right = _overconfident(rng, 600)
    kinds = ["local"] * 300 + ["unchanged"] * 290 + ["exception"] * 10
    sure = np.r_[right[:300], np.ones(300, dtype=bool)]  # `..` is always right here
    fitted = fit(kinds, p, sure, {"test": "synthetic"})
    assert set(fitted.curves) == {"local", "unchanged"}
    assert fitted.probability("unchanged", 0.2) > 0.9 > fitted.probability("local", 0.2)
    assert fitted.probability("exception", 0.5) == fitted.fallback(0.5)  # type: ignore[misc]
    assert fitted.probability("line", 0.42) == 0.42  # no line curve: the line's own probability


def test_calibrating_a_frame_keeps_a_cut_value_at_zero():
    flat = Curve([0.0, 1.0], [0.3, 0.3])
    calibration = Calibration(curves={"local": flat, "return": flat})
    frame = FrameConfidence(line=0.9, locals={"a": 0.99, "b": 0.0}, cut_locals=frozenset({"b"}), event="line")
    shown = calibrate(frame, calibration)
    assert shown.locals == {"a": 0.3, "b": 0.0} and shown.line == 0.9


def test_calibration_figures_count_values_and_programs_and_give_an_interval():
    separated = summary([0.9, 0.8, 0.3, 0.2], [True, True, False, False], ["a", "a", "b", "b"])
    assert separated["auroc"] == 1.0 and separated["top_half_accuracy"] == 1.0
    assert separated["ece"] == pytest.approx((0.1 + 0.2 + 0.3 + 0.2) / 4)
    assert separated["n"] == 4 and separated["programs"] == 2
    lo, hi = separated["ece_ci95"]
    assert lo <= separated["ece"] <= hi
    assert summary([0.5, 0.5], [True, False], ["a", "a"])["auroc"] == 0.5  # ties count half
    assert summary([], [], [])["auroc"] is None


# -- end to end: the model folder's calibration is what users see -----------------------------------------


@pytest.fixture
def model_with_flat_calibration(tmp_path):
    """The embedded model's files, with a calibration that says 0.3 for every value."""
    pytest.importorskip("torch")
    folder = tmp_path / "model"
    folder.mkdir()
    for name in os.listdir(embedded_model_path()):
        if name != "calibration.json":
            (folder / name).symlink_to(os.path.join(embedded_model_path(), name))
    flat = Curve([0.0, 1.0], [0.3, 0.3])
    dump(Calibration(curves={"local": flat}, fallback=flat), str(folder / "calibration.json"))
    return folder


def test_the_terminal_shows_the_model_folders_calibrated_confidence(model_with_flat_calibration):
    command = [sys.executable, "-m", "neural_dap", "debug", str(EXAMPLES / "bubble_sort.py")]
    command += ["--entry", "bubble_sort", "--args", "[3, 1, 2]", "--world", "neural", "--do", "s; s"]
    env = {**os.environ, "NEURAL_DAP_EMBEDDED_MODEL": str(model_with_flat_calibration)}
    out = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    predicted = [line for line in out.stdout.splitlines() if "| items = " in line]
    assert predicted and all(line.endswith("?  (p=0.30)") for line in predicted)


def test_eval_nextstate_reports_through_the_calibration_and_the_raw_figures_beside(
    model_with_flat_calibration, tmp_path, capsys
):
    from neural_dap.cli.main import main

    program = {
        "id": 0,
        "source": "def f(xs):\n    t = 0\n    for x in xs:\n        t += x\n    return t\n",
        "entry": "f",
        "args": "[1, 2]",
    }
    (tmp_path / "heldout.jsonl").write_text(json.dumps(program) + "\n")
    args = ["eval", "nextstate", "--data", str(tmp_path), "--model", str(model_with_flat_calibration)]
    assert main([*args, "--trajectories", "1", "--json", "--quiet"]) == 0
    figures = json.loads(capsys.readouterr().out)["calibration"]
    assert figures["calibrated"] and figures["mean_confidence"] == 0.3
    assert figures["raw"]["mean_confidence"] != 0.3 and figures["n"] == figures["values"] > 0
    assert main([*args, "--calibration", "none", "--trajectories", "1", "--json", "--quiet"]) == 0
    raw = json.loads(capsys.readouterr().out)["calibration"]
    assert not raw["calibrated"] and raw["mean_confidence"] == figures["raw"]["mean_confidence"]


def test_eval_calibrate_fits_what_eval_nextstate_then_reports_through(tmp_path, capsys):
    from neural_dap.cli.main import main

    pytest.importorskip("torch")
    out = tmp_path / "calibration.json"
    assert (
        main(["eval", "calibrate", "--real", str(EXAMPLES), "--limit", "2", "--out", str(out), "--quiet", "--json"])
        == 0
    )
    fitted = load(str(out))
    assert fitted is not None and fitted.fallback is not None
    assert any(origin.endswith("examples") for origin in fitted.fitted_on)
    capsys.readouterr()
    assert (
        main(
            [
                "eval",
                "nextstate",
                "--real",
                str(EXAMPLES),
                "--limit",
                "2",
                "--calibration",
                str(out),
                "--json",
                "--quiet",
            ]
        )
        == 0
    )
    figures = json.loads(capsys.readouterr().out)["calibration"]
    # in sample, with too few values for more than one step, every value shows the smoothed share right
    n, right = figures["n"], round(figures["accuracy"] * figures["n"])
    assert figures["mean_confidence"] == pytest.approx((right + 1) / (n + 2), abs=0.02)


def test_cruxeval_is_refused_as_calibration_data(capsys):
    from neural_dap.cli.main import main

    with pytest.raises(SystemExit):
        main(["eval", "calibrate", "--real", "/data/cruxeval-dev.jsonl", "--out", "/tmp/x.json"])
    assert "evaluation data" in capsys.readouterr().err


def test_the_shipped_model_has_a_calibration_every_world_applies():
    from neural_dap.core.world import Entry, LaunchSpec
    from neural_dap.world.factory import create_world

    shipped = load(embedded_model_path())
    assert shipped is not None and {"local", "unchanged", "return"} <= set(shipped.curves)
    for curve in shipped.curves.values():
        assert all(0 < y < 1 for y in curve.y) and curve.y == sorted(curve.y)
    world = create_world(LaunchSpec(program=str(EXAMPLES / "recursion.py"), world="neural", entry=Entry("f", "3")))
    assert world.calibration == shipped  # type: ignore[attr-defined]
    raw = create_world(
        LaunchSpec(program="x.py", world="neural", options={"model": {"url": "embedded", "calibration": "none"}})
    )
    assert raw.calibration is None  # type: ignore[attr-defined]


# -- what the program says about a claim of "unchanged" ------------------------------------------------

PROGRAM = """\
import random

total = 0
items = []
for x in [3, 1]:
    total += x
    items.append(x)
    print(total, items)
random.shuffle(items)
label = ", ".join(map(str, items))


def bump(counts, key):
    counts[key] = counts.get(key, 0) + 1
    return counts
"""


def test_the_program_says_which_names_a_statement_can_change():
    from neural_dap.core.source import SourceInfo
    from neural_dap.core.writes import ProgramWrites

    writes = ProgramWrites(SourceInfo(PROGRAM))
    assert writes.at(5) == {"x"}  # the loop header binds its target
    assert writes.at(6) == {"total"}
    assert writes.at(7) == {"items"}  # a method call changes its receiver, not what it is given
    assert writes.at(8) == set()  # print changes nothing
    assert writes.at(9) == {"random", "items"}  # a call may change what it is given
    assert writes.at(10) == {"label"}  # readers (join, map, str) change nothing
    assert writes.at(14) == {"counts"}  # a subscript store changes the container
    assert writes.within(15) == {"counts"} and "total" in writes.within(3)  # type: ignore[operator]
    assert writes.at(2) is None and ProgramWrites(SourceInfo("def f(:\n")).within(1) is None


def test_a_claim_of_unchanged_is_sorted_by_whether_the_line_run_writes_the_name():
    from neural_dap.core.source import SourceInfo
    from neural_dap.core.state import State
    from neural_dap.core.writes import ProgramWrites
    from neural_dap.format.calibration import value_kind, written_since
    from neural_dap.format.trace import TraceText

    info = SourceInfo(PROGRAM)
    trace = TraceText("nd", info, 3)
    trace.append(State("line", 6, info.line_text(6), "<module>", 0, 0, {"total": "0", "items": "[]", "x": "3"}))
    landed = trace.parse(
        '<|line_sep|>{"total": "3", "items": "..", "x": ".."}<|action_sep|>' + info.line_text(7) + "\n"
    )
    assert isinstance(landed, State) and landed.line == 7
    written = written_since(trace, landed, "step_over", ProgramWrites(info))
    assert written == {"total"}
    kinds = {
        name: value_kind("line", unchanged=name in ("items", "x"), written=name in written)
        for name in ("total", "items", "x")
    }
    assert kinds == {"total": "local", "items": "unchanged", "x": "unchanged"}
    assert value_kind("line", unchanged=True, written=True) == "unchanged_written"
    assert value_kind("line", written=False) == "local_unwritten"
    # a jump may have run any statement of the scope
    assert "items" in written_since(trace, landed, "continue", ProgramWrites(info))  # type: ignore[operator]


async def test_a_served_model_whose_name_is_a_model_folder_brings_its_calibration(tmp_path):
    """vLLM serves `--model DIR` under the name DIR: a session on that server shows DIR's calibration."""
    from neural_dap.core.world import Entry, LaunchSpec
    from neural_dap.world.neural import ModelSettings, NeuralWorld

    from .fakes import ScriptedClient

    folder = tmp_path / "served"
    folder.mkdir()
    flat = Curve([0.0, 1.0], [0.3, 0.3])
    dump(Calibration(curves={"local": flat}), str(folder / "calibration.json"))
    program = tmp_path / "p.py"
    program.write_text("def f(x):\n    y = x + 1\n    return y\n")
    launch = LaunchSpec(program=str(program), world="neural", entry=Entry("f", "1"))
    client = ScriptedClient([])
    client.name = str(folder)
    world = NeuralWorld(client, ModelSettings(url="http://127.0.0.1:1/v1"))
    await world.start(launch)
    assert world.calibration == load(str(folder))
    raw = NeuralWorld(client, ModelSettings(url="http://127.0.0.1:1/v1", calibration="none"))
    await raw.start(launch)
    assert raw.calibration is None
