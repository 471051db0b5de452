"""`neural-dap lsp --check FILE`: what an editor would show, printed as text.

The source is printed as an editor shows it: code lenses above their `def` lines, inlay hints after
the lines they belong to, diagnostics under theirs. The same analyzer and views as the server.
"""

from __future__ import annotations

import os

from lsprotocol import types as lsp

from neural_dap.lsp import views
from neural_dap.lsp.analyzer import Analyzer, entry_from_arguments
from neural_dap.lsp.entries import EntryCall
from neural_dap.lsp.runs import Kind
from neural_dap.lsp.settings import LspSettings

SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}


async def check(path: str, calls: list[str], settings: LspSettings, find_input: bool = False) -> str:
    analyzer = Analyzer(settings)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        uri = "file://" + os.path.abspath(path)
        doc = analyzer.update(uri, os.path.abspath(path), 1, text)
        if doc.plan.syntax_error:
            return f"{path}: cannot be parsed ({doc.plan.syntax_error})"
        wanted: list[tuple[EntryCall | None, Kind]] = []
        for call in calls:
            entry = entry_from_arguments(doc, [uri, call])
            for kind in settings.kinds:
                wanted.append((entry, kind))
            analyzer.select(doc, entry, settings.kinds[0])
        if not calls:
            wanted = analyzer.automatic(doc)
            if not wanted and doc.plan.script:
                analyzer.select(doc, None, settings.kinds[0])
                wanted = [(None, kind) for kind in settings.kinds]
        runs = await analyzer.run_all(doc, wanted)
        if find_input:
            for entry in dict.fromkeys(e for e, _ in wanted if e is not None and e.returns is not None):
                await analyzer.find_input(doc, entry)
        header = [f"{path}: world {settings.world}"]
        header += [f"  {run.label} ({run.kind}): {run.ended}, {run.steps} steps, {run.seconds:.2f} s" for run in runs]
        if not runs:
            header.append("  nothing to run: add `# neural-dap: f(...)` to a def line, or pass --entry 'f(...)'")
        return (
            "\n".join(header)
            + "\n\n"
            + render(text, views.code_lenses(doc), views.inlay_hints(analyzer, doc), views.diagnostics(analyzer, doc))
        )
    finally:
        await analyzer.close_all()


def render(text: str, lenses: list[lsp.CodeLens], hints: list[lsp.InlayHint], diagnostics: list[lsp.Diagnostic]) -> str:
    lines = text.splitlines()
    width = len(str(len(lines)))
    out = []
    for index, line in enumerate(lines):
        titles = [lens.command.title for lens in lenses if lens.range.start.line == index and lens.command]
        if titles:
            indent = " " * (len(line) - len(line.lstrip()))
            out.append(f"{'':>{width}} | {indent}[{' | '.join(titles)}]")
        labels = [str(hint.label) for hint in hints if hint.position.line == index]
        suffix = "  ⟨" + "; ".join(labels) + "⟩" if labels else ""
        out.append(f"{index + 1:>{width}} | {line}{suffix}")
        for diagnostic in diagnostics:
            if diagnostic.range.start.line == index:
                column = diagnostic.range.start.character
                kind = SEVERITY.get(int(diagnostic.severity or 1), "info")
                out.append(f"{'':>{width}} | {' ' * column}^ {kind}: {diagnostic.message}")
    return "\n".join(out)
