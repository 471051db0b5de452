"""A call of one function shows the model the part of the module the call can reach."""

from __future__ import annotations

import textwrap

from neural_dap.core.focus import focus_lines
from neural_dap.core.source import START_MARKER, SourceInfo

MODULE = textwrap.dedent(
    """\
    import math

    LIMIT = 10


    def helper(x):
        return math.sqrt(x)


    def unrelated(y):
        return y * 2


    class Box:
        def size(self):
            return LIMIT


    def main(values):
        box = Box()
        return [helper(v) for v in values if v < box.size()]


    if __name__ == "__main__":
        print(main([1, 4, 9]))
    """
)


def shown_text(function: str) -> str:
    lines = focus_lines(MODULE, function)
    assert lines is not None
    info = SourceInfo(MODULE)
    return info.with_start_marker(info.def_line(function) or 1, lines)


def test_the_call_sees_what_it_names_transitively_and_nothing_else():
    text = shown_text("main")
    for needed in ("import math", "LIMIT = 10", "def helper(x):", "class Box:", "return LIMIT", "def main(values):"):
        assert needed in text
    for left_out in ("def unrelated", "__main__", "print(main"):
        assert left_out not in text
    assert f"def main(values):{START_MARKER}" in text
    assert "\n\n\n" not in text  # a gap is one blank line


def test_a_function_that_needs_the_whole_module_or_none_gets_everything():
    assert focus_lines("def f(x):\n    return x\n", "f") is None  # nothing to leave out
    assert focus_lines(MODULE, "nowhere") is None
    assert focus_lines("def f(:\n", "f") is None
    assert "class Box:" in shown_text("size")  # a method brings its class
