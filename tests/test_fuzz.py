"""A short run of each fuzzer in `fuzz/fuzz_inputs.py` (the full run is a script, not a unit test)."""

from __future__ import annotations

import pytest

from fuzz import fuzz_inputs as fuzz


def test_generated_expressions_only_ever_give_a_value_or_an_evaluation_error():
    report = fuzz.fuzz_evaluator(150)
    assert report.examples == 150 and not report.crashes and not report.hangs


def test_generated_model_text_and_reprs_only_ever_parse_or_give_a_format_error():
    report = fuzz.fuzz_parsers(150)
    assert report.examples == 150 and not report.crashes and not report.hangs


@pytest.mark.parametrize("transport", ["tcp", "stdio"])
def test_generated_dap_streams_never_crash_or_hang_the_adapter(transport, tmp_path):
    report = fuzz.fuzz_adapter(15, transport, str(tmp_path))
    assert report.examples == 15 and not report.crashes and not report.hangs
