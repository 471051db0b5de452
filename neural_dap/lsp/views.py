"""What an editor shows, made from runs: inlay hints, hovers, diagnostics, code lenses and actions.

Pure functions of the analyzer's state (no I/O), so the server and `--check` print the same thing.
Recorded values read `x = 3`; predicted ones `x ≈ 3`; where the model's prediction of a line
disagreed with reality, the hint adds `✗ model: x ≈ 4`.
"""

from __future__ import annotations

import re

from lsprotocol import types as lsp

from neural_dap.lsp.analyzer import Analyzer, Document, Selection
from neural_dap.lsp.entries import EntryCall
from neural_dap.lsp.runs import FoundInput, LineFacts, Run, Series

SOURCE = "neural-dap"
VALUE_WIDTH = 40
LABEL_WIDTH = 120
HOVER_VALUES = 12
TRACE, PREDICT, FIND_INPUT = "neural-dap.trace", "neural-dap.predict", "neural-dap.findInput"
COMMANDS = (TRACE, PREDICT, FIND_INPUT)
NAME_RE = re.compile(r"[A-Za-z_]\w*")


def _short(text: str, width: int = VALUE_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def series_text(series: Series) -> str:
    """`6`, `3 (3×)` when it never changed, or first … last with the count: `3 … 6 (3×)`."""
    values = series.values
    if series.count == 1:
        return _short(values[0])
    if len({*series.first, series.last}) == 1:
        return f"{_short(series.last)} ({series.count}×)"
    return f"{_short(series.first[0])} … {_short(series.last)} ({series.count}×)"


def line_label(facts: LineFacts, predicted: bool) -> str:
    sign = "≈" if predicted else "="
    parts = [f"{name} {sign} {series_text(series)}" for name, series in facts.changed.items()]
    if facts.returned is not None:
        parts.append(f"returns {'≈ ' if predicted else ''}{series_text(facts.returned)}")
    parts.extend(f"raises {_short(value)}" for value in dict.fromkeys(facts.raised))
    return _short(", ".join(parts), LABEL_WIDTH) if parts else ""


# -- which runs a document shows ---------------------------------------------------------------------
def shown_runs(analyzer: Analyzer, doc: Document) -> list[tuple[Selection, Run, Run | None, tuple[int, int] | None]]:
    """(selection, the run it shows, a neural run checked against it, the lines it owns)."""
    out = []
    for selection, owned in analyzer.shown(doc):
        run = analyzer.result(doc, selection.entry, selection.kind)
        if run is None:
            continue
        checked = analyzer.result(doc, selection.entry, "neural") if selection.kind == "recorded" else None
        out.append((selection, run, checked, owned))
    return out


def _owners(doc: Document, shown) -> list[tuple[int, int]]:
    return [owned for _, _, _, owned in shown if owned is not None]


def _owns(line: int, owned: tuple[int, int] | None, others: list[tuple[int, int]]) -> bool:
    if owned is not None:
        return owned[0] <= line <= owned[1]
    return not any(a <= line <= b for a, b in others)  # the script shows the lines no function claims


def inlay_hints(analyzer: Analyzer, doc: Document, start: int = 1, end: int | None = None) -> list[lsp.InlayHint]:
    lines = doc.text.splitlines()
    end = end or len(lines)
    shown = shown_runs(analyzer, doc)
    claimed = _owners(doc, shown)
    hints = []
    for _selection, run, checked, owned in shown:
        predicted = run.kind == "neural"
        for number, facts in sorted(run.lines.items()):
            if not start <= number <= end or number > len(lines) or not _owns(number, owned, claimed):
                continue
            label = line_label(facts, predicted)
            diverged = list(facts.diverged)
            if checked is not None and number in checked.lines:
                diverged += checked.lines[number].diverged
            if diverged:
                label = f"{label}  ✗ model: {_short(', '.join(dict.fromkeys(diverged)), LABEL_WIDTH)}".strip()
            if not label:
                continue
            tooltip = _tooltip(run, facts, diverged)
            hints.append(
                lsp.InlayHint(
                    position=lsp.Position(number - 1, len(lines[number - 1])),
                    label=label,
                    padding_left=True,
                    tooltip=tooltip,
                )
            )
    for found in analyzer.found.get((doc.uri, doc.version), []):
        if found.entry.line and start <= found.entry.line <= end and found.entry.line <= len(lines):
            hints.append(
                lsp.InlayHint(
                    position=lsp.Position(found.entry.line - 1, len(lines[found.entry.line - 1])),
                    label=found_text(found),
                    padding_left=True,
                )
            )
    return hints


def _tooltip(run: Run, facts: LineFacts, diverged: list[str]) -> str:
    origin = "predicted by the model" if run.kind == "neural" else "recorded from a real run"
    text = f"{run.label}: {origin}; line ran {facts.hits}×" if facts.hits else f"{run.label}: {origin}"
    if diverged:
        text += "\nthe model predicted instead: " + "; ".join(dict.fromkeys(diverged))
    return text


def found_text(found: FoundInput) -> str:
    target = f"→ {found.entry.returns}"
    if found.args is None:
        return f"no input found for {target}: {found.error}"
    call = f"{found.entry.function}({found.args})"
    if found.verified is None:
        return f"input ≈ {call} for {target} (not checked)"
    if found.verified:
        return f"input ≈ {call} for {target} ✓ checked by a real run"
    return f"input ≈ {call} for {target} ✗ a real run returns {found.actual}"


# -- hover ------------------------------------------------------------------------------------------------
def word_at(text: str, line: int, character: int) -> str | None:
    lines = text.splitlines()
    if not 0 <= line < len(lines):
        return None
    for match in NAME_RE.finditer(lines[line]):
        if match.start() <= character <= match.end():
            return match.group()
    return None


def hover(analyzer: Analyzer, doc: Document, line: int, character: int) -> lsp.Hover | None:
    """`x` at a line: its values there, recorded and predicted side by side."""
    name = word_at(doc.text, line, character)
    if name is None:
        return None
    number = line + 1
    rows = []
    shown = shown_runs(analyzer, doc)
    claimed = _owners(doc, shown)
    for selection, run, checked, owned in shown:
        if not _owns(number, owned, claimed):
            continue
        runs = [run] + ([checked] if checked is not None else [])
        if run.kind == "neural":
            real = analyzer.result(doc, selection.entry, "recorded")
            runs = ([real] if real is not None else []) + runs
        for each in runs:
            facts = each.lines.get(number)
            series = None if facts is None else facts.changed.get(name) or facts.seen.get(name)
            if facts is not None and series is not None:
                values = " → ".join(_short(v) for v in series.values[:HOVER_VALUES])
                origin = "predicted" if each.kind == "neural" else "recorded"
                rows.append(f"{origin}: `{values}`, {facts.hits} hit{'s' if facts.hits != 1 else ''} ({each.label})")
    if not rows:
        return None
    return lsp.Hover(
        contents=lsp.MarkupContent(
            kind=lsp.MarkupKind.Markdown, value=f"**{name}** at line {number}\n\n" + "\n\n".join(rows)
        )
    )


# -- diagnostics ---------------------------------------------------------------------------------------
def _line_range(doc: Document, number: int) -> lsp.Range:
    lines = doc.text.splitlines()
    text = lines[number - 1] if 0 < number <= len(lines) else ""
    start = len(text) - len(text.lstrip())
    return lsp.Range(lsp.Position(number - 1, start), lsp.Position(number - 1, len(text)))


def diagnostics(analyzer: Analyzer, doc: Document) -> list[lsp.Diagnostic]:
    out = []
    for selection, run, checked, _owned in shown_runs(analyzer, doc):
        out.extend(_run_diagnostics(doc, run, selection.entry))
        if checked is not None:
            out.extend(_run_diagnostics(doc, checked, selection.entry))
    for found in analyzer.found.get((doc.uri, doc.version), []):
        severity = lsp.DiagnosticSeverity.Information if found.verified else lsp.DiagnosticSeverity.Hint
        out.append(_diagnostic(doc, found.entry.line or 1, found_text(found), severity))
    if analyzer.withheld(doc):  # said where the hints would be, so their absence is no mystery
        line = next((f.line for f in doc.plan.functions if f.entries), 1)
        out.append(_diagnostic(doc, line, analyzer.trust.explain(doc.path), lsp.DiagnosticSeverity.Information))
    return out


def _run_diagnostics(doc: Document, run: Run, entry: EntryCall | None) -> list[lsp.Diagnostic]:
    out = []
    predicted = run.kind == "neural"
    for raised in run.raises:
        if predicted:
            text, severity = (
                f"the model predicts {run.label} raises {raised.value} here",
                lsp.DiagnosticSeverity.Warning,
            )
        elif raised.caught:
            text, severity = f"{run.label} raises {raised.value} here (caught)", lsp.DiagnosticSeverity.Information
        else:
            text, severity = f"{run.label} raises {raised.value} here", lsp.DiagnosticSeverity.Error
        out.append(_diagnostic(doc, raised.line, text, severity))
    if run.divergences:
        line, what = run.divergences[0]
        text = f"surprise: the model's prediction of {run.label} first departs from the real run here: {what}"
        out.append(_diagnostic(doc, line, text, lsp.DiagnosticSeverity.Information))
    where = entry.line if entry is not None and entry.line else 1
    if run.error is not None:
        origin = "prediction" if predicted else "recording"
        out.append(
            _diagnostic(doc, where, f"{origin} of {run.label} stopped: {run.error}", lsp.DiagnosticSeverity.Warning)
        )
    elif run.truncated:
        text = f"{run.label}: {run.ended}; values are shown up to there"
        out.append(_diagnostic(doc, where, text, lsp.DiagnosticSeverity.Information))
    return out


def _diagnostic(doc: Document, line: int, message: str, severity: lsp.DiagnosticSeverity) -> lsp.Diagnostic:
    return lsp.Diagnostic(range=_line_range(doc, line), message=message, severity=severity, source=SOURCE)


# -- lenses and actions ---------------------------------------------------------------------------------
def commands_for(doc: Document, line: int | None = None) -> list[tuple[int, lsp.Command]]:
    """(line, command) for each entry of each function (and the script), optionally on one line."""
    out = []
    for function in doc.plan.functions:
        if line is not None and function.line != line:
            continue
        for entry in function.entries:
            out.append(
                (
                    function.line,
                    lsp.Command(title=f"Trace {entry.label}", command=TRACE, arguments=[doc.uri, entry.label]),
                )
            )
            out.append(
                (
                    function.line,
                    lsp.Command(title=f"Predict {entry.label}", command=PREDICT, arguments=[doc.uri, entry.label]),
                )
            )
            if entry.returns is not None:
                call = f"{entry.label} -> {entry.returns}"
                title = f"Find an input for this output ({_short(entry.returns, 24)})"
                out.append((function.line, lsp.Command(title=title, command=FIND_INPUT, arguments=[doc.uri, call])))
    if doc.plan.script and (line is None or line == 1):
        out.append((1, lsp.Command(title="Trace this script", command=TRACE, arguments=[doc.uri])))
        out.append((1, lsp.Command(title="Predict this script", command=PREDICT, arguments=[doc.uri])))
    return out


def code_lenses(doc: Document) -> list[lsp.CodeLens]:
    return [
        lsp.CodeLens(range=lsp.Range(lsp.Position(line - 1, 0), lsp.Position(line - 1, 0)), command=command)
        for line, command in commands_for(doc)
    ]


def code_actions(doc: Document, start_line: int, end_line: int) -> list[lsp.CodeAction]:
    """The lenses' commands as code actions on the `def` lines of a range (for clients without lenses)."""
    out = []
    for line in range(start_line, end_line + 1):
        for _line, command in commands_for(doc, line):
            out.append(lsp.CodeAction(title=command.title, command=command))
    return out
