"""Static facts about a program's source text: lines, code objects, executable lines.

Used by the format parser (which function does a predicted line belong to?), by the DAP layer
(is a breakpoint line executable? where does function `f` start?) and by the recorder's callers.
The source is only compiled, never executed. Code that does not compile (a partial snippet given
to the neural world model) falls back to line-based heuristics.
"""

from __future__ import annotations

import difflib
import re
import types
from dataclasses import dataclass, field
from functools import cached_property

START_MARKER = "  # << START_OF_TRACE"
_LINE_END = re.compile(r"\r\n|\r|\n")
_DEF_RE = re.compile(r"^\s*(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(")


@dataclass(frozen=True)
class CodeSpan:
    """One code object of the program: a function, lambda, comprehension or the module."""

    name: str
    first_line: int
    lines: frozenset[int]  # lines that have bytecode in this code object (not nested ones)
    last_line: int
    body_first_line: int | None  # first line that runs when the code object starts

    def contains(self, line: int) -> bool:
        return self.first_line <= line <= self.last_line


@dataclass
class SourceInfo:
    text: str
    filename: str = "<source>"
    _lines: list[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # lines as Python numbers them: str.splitlines would also break at a form feed, \x1c..\x1e,
        # \x85 or \u2028, which Python's tokenizer reads as ordinary characters
        self._lines = _LINE_END.split(self.text)
        if self._lines and self._lines[-1] == "":
            self._lines.pop()

    # -- lines ---------------------------------------------------------------------------------
    @property
    def line_count(self) -> int:
        return len(self._lines)

    def line_text(self, line: int) -> str:
        """The source line without its newline ('' outside the file)."""
        if 1 <= line <= len(self._lines):
            return self._lines[line - 1]
        return ""

    def lines_matching(self, text: str) -> list[int]:
        """Line numbers whose text equals `text` (trailing newline and start marker ignored)."""
        wanted = text.rstrip("\n")
        if wanted.endswith(START_MARKER):
            wanted = wanted[: -len(START_MARKER)]
        return [i + 1 for i, line in enumerate(self._lines) if _strip_marker(line) == wanted]

    def closest_line(self, text: str, cutoff: float = 0.6) -> int | None:
        """The line whose text is most like `text` (a model's misspelt copy of a source line), if any
        is at least `cutoff` alike (difflib's ratio); ties go to the first such line."""
        wanted = text.strip()  # indentation alone would make any two lines look alike
        best: tuple[float, int] | None = None
        for i, line in enumerate(self._lines):
            candidate = _strip_marker(line).strip()
            if not candidate:
                continue
            ratio = difflib.SequenceMatcher(None, wanted, candidate, autojunk=False).ratio()
            if ratio >= cutoff and (best is None or ratio > best[0]):
                best = (ratio, i + 1)
        return best[1] if best else None

    # -- code objects ----------------------------------------------------------------------------
    @cached_property
    def compiles(self) -> bool:
        return self._module_code is not None

    @cached_property
    def _module_code(self) -> types.CodeType | None:
        try:
            return compile(self.text, self.filename, "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            return None

    @cached_property
    def spans(self) -> tuple[CodeSpan, ...]:
        code = self._module_code
        if code is None:
            return self._heuristic_spans()
        spans: list[CodeSpan] = []
        stack = [code]
        while stack:
            co = stack.pop()
            lines = frozenset(ln for _, _, ln in co.co_lines() if ln is not None and ln > 0)
            nested = [c for c in co.co_consts if isinstance(c, types.CodeType)]
            stack.extend(nested)
            first = co.co_firstlineno
            last = max(lines | {first})
            body = sorted(ln for ln in lines if ln > first) if co.co_name != "<module>" else sorted(lines)
            if co.co_name in ("<lambda>", "<genexpr>", "<listcomp>", "<setcomp>", "<dictcomp>"):
                body = sorted(lines)
            spans.append(CodeSpan(co.co_name, first, lines, last, body[0] if body else None))
        # nested code objects extend their parents' ranges
        spans.sort(key=lambda s: (s.first_line, -s.last_line))
        return tuple(_extend_ranges(spans))

    def _heuristic_spans(self) -> tuple[CodeSpan, ...]:
        """For code that does not compile: a function is a `def` line and its indented block."""
        spans: list[CodeSpan] = []
        all_lines = frozenset(self.executable_lines_heuristic())
        spans.append(CodeSpan("<module>", 1, all_lines, max(len(self._lines), 1), min(all_lines, default=None)))
        for i, raw in enumerate(self._lines, start=1):
            m = _DEF_RE.match(raw)
            if not m:
                continue
            indent = len(raw) - len(raw.lstrip())
            last = i
            body: list[int] = []
            for j in range(i + 1, len(self._lines) + 1):
                text = self._lines[j - 1]
                if not text.strip() or text.lstrip().startswith("#"):
                    continue
                if len(text) - len(text.lstrip()) <= indent:
                    break
                last = j
                body.append(j)
            spans.append(CodeSpan(m.group(1), i, frozenset([i, *body]), last, body[0] if body else None))
        return tuple(spans)

    def executable_lines_heuristic(self) -> list[int]:
        out = []
        for i, raw in enumerate(self._lines, start=1):
            s = raw.strip()
            if s and not s.startswith("#") and not s.startswith(("else:", "try:", "finally:")):
                out.append(i)
        return out

    @cached_property
    def executable_lines(self) -> frozenset[int]:
        if not self.compiles:
            return frozenset(self.executable_lines_heuristic())
        out: set[int] = set()
        for span in self.spans:
            out |= span.lines
        return frozenset(out)

    def innermost_span(self, line: int, *, named_first: bool = True) -> CodeSpan | None:
        """The innermost code object with bytecode at `line` (a named function before a lambda or
        generator expression on the same line), else the innermost one whose range holds it."""
        having = [s for s in self.spans if line in s.lines]
        if named_first:
            named = [s for s in having if not s.name.startswith("<") or s.name == "<module>"]
            having = named or having
        pool = having or [s for s in self.spans if s.contains(line)]
        if not pool:
            return None
        return min(pool, key=lambda s: (s.name == "<module>", s.last_line - s.first_line, -s.first_line))

    def function_at(self, line: int, *, starting: bool = False) -> str:
        """The name of the function a state at `line` belongs to.

        `starting` is true for `call` states: prefer a code object that starts at this line (a def,
        lambda or generator expression) over one that merely holds it (a resumed generator).
        """
        if starting:
            starts = [s for s in self.spans if s.first_line == line and s.name != "<module>"]
            if starts:
                named = [s for s in starts if not s.name.startswith("<")]
                return (named or starts)[0].name
            m = _DEF_RE.match(self.line_text(line))
            if m:
                return m.group(1)
        span = self.innermost_span(line)
        if span is not None:
            return span.name
        m = _DEF_RE.match(self.line_text(line))
        return m.group(1) if m else "<module>"

    def shared_line(self, line: int) -> bool:
        """Do several code objects have bytecode at `line` (a lambda or generator expression in a
        function, a def line the module runs)? Then a state there could be in either."""
        return sum(1 for s in self.spans if line in s.lines) > 1

    def function_spans(self, name: str) -> list[CodeSpan]:
        return [s for s in self.spans if s.name == name]

    def first_body_lines(self, name: str) -> list[int]:
        """Where a function breakpoint on `name` stops: the first line of each such function."""
        return sorted({s.body_first_line for s in self.function_spans(name) if s.body_first_line})

    def def_line(self, name: str) -> int | None:
        spans = self.function_spans(name)
        return spans[0].first_line if spans else None

    def module_first_line(self) -> int | None:
        """The module's first line event: the first line its own code runs."""
        spans = self.function_spans("<module>")
        return spans[0].body_first_line if spans else None

    def last_return_line(self, name: str) -> int | None:
        """The last `return` line of function `name` (for a launch that starts at a return value)."""
        for span in self.function_spans(name):
            returns = [ln for ln in sorted(span.lines) if self.line_text(ln).strip().startswith("return")]
            if returns:
                return returns[-1]
            return span.last_line
        return None

    def with_start_marker(self, line: int, shown: frozenset[int] | None = None) -> str:
        """The source text with the entry line marked, as the CWM trace context wants it; with
        `shown`, only those lines (a blank line where others were left out)."""
        out = list(self._lines)
        if 1 <= line <= len(out):
            out[line - 1] = out[line - 1] + START_MARKER
        if shown is not None:
            out = _only(out, shown)
        text = "\n".join(out)
        return text + "\n" if self.text.endswith("\n") or out else text


def mark_as_written(text: str, line: int) -> str:
    """`text` exactly as it is, with the start marker at the end of line `line` (lines counted as
    Python counts them: only \\n, \\r\\n and \\r end a line). CWM's own debugger sends the file
    unchanged, so nothing else is cropped or normalised."""
    ends = [m.start() for m in _LINE_END.finditer(text)] + [len(text)]
    if not 1 <= line <= len(ends) or (line == len(ends) and ends[-1] == len(text) and text[-1:] in ("\n", "\r")):
        return text  # no such line (the empty "line" after a final newline is none)
    cut = ends[line - 1]
    if text[:cut].endswith(START_MARKER):
        return text  # marked already, as a file written for cwmdbg is
    return text[:cut] + START_MARKER + text[cut:]


def read_source(path: str) -> str | None:
    """A program's text from disk (None when it cannot be read): the one place that reads it."""
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _only(lines: list[str], shown: frozenset[int]) -> list[str]:
    kept: list[str] = []
    for number, text in enumerate(lines, start=1):
        if number in shown:
            kept.append(text)
        elif kept and kept[-1].strip():
            kept.append("")  # one blank line marks a gap, as between definitions
    while kept and not kept[-1].strip():
        kept.pop()
    return kept


def _strip_marker(line: str) -> str:
    return line[: -len(START_MARKER)] if line.endswith(START_MARKER) else line


def _extend_ranges(spans: list[CodeSpan]) -> list[CodeSpan]:
    """A code object's range covers its nested code objects' lines too."""
    by_range = list(spans)
    changed = True
    while changed:
        changed = False
        for i, outer in enumerate(by_range):
            for inner in by_range:
                if inner is outer or inner.first_line < outer.first_line:
                    continue
                if outer.first_line <= inner.first_line <= outer.last_line and inner.last_line > outer.last_line:
                    by_range[i] = outer = CodeSpan(
                        outer.name, outer.first_line, outer.lines, inner.last_line, outer.body_first_line
                    )
                    changed = True
    return by_range
