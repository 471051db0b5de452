"""`neural-dap lsp --check FILE`: what an editor would show, printed as text.

The source is printed as an editor shows it: code lenses above their `def` lines, inlay hints after
the lines they belong to, diagnostics under theirs. The same analyzer and views as the server.

Like the server, it records (executes the file) only in a trusted folder, or with `trusted` (the
`--trust` flag: the user asks for this run); otherwise it says what it would have run.
"""

from __future__ import annotations

import os
import shlex

from lsprotocol import types as lsp

from neural_dap.lsp import views
from neural_dap.lsp.analyzer import Analyzer, entry_from_arguments
from neural_dap.lsp.entries import EntryCall
from neural_dap.lsp.runs import Kind
from neural_dap.lsp.settings import LspSettings
from neural_dap.lsp.trust import WorkspaceTrust

SEVERITY = {1: "error", 2: "warning", 3: "info", 4: "hint"}


async def check(
    path: str, calls: list[str], settings: LspSettings, find_input: bool = False, trusted: bool = False
) -> str:
    analyzer = Analyzer(settings, trust=WorkspaceTrust(editor=True if trusted else None))
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        uri = "file://" + os.path.abspath(path)
        doc = analyzer.update(uri, os.path.abspath(path), 1, text)
        if doc.plan.syntax_error:
            return f"{path}: cannot be parsed ({doc.plan.syntax_error})"
        kinds = analyzer.automatic_kinds(doc)  # without trust, not the recorded world
        targets: list[EntryCall | None] = []
        for call in calls:
            entry = entry_from_arguments(doc, [uri, call])
            targets.append(entry)
            analyzer.select(doc, entry, (kinds or settings.kinds)[0])
        if not calls:
            if settings.auto_run != "off":
                targets = [s.entry for f in doc.plan.functions if (s := analyzer.selection(doc, f)) is not None]
            if doc.plan.script and (settings.auto_run == "all" or not targets):
                if not targets:
                    analyzer.select(doc, None, (kinds or settings.kinds)[0])
                targets.append(None)
        wanted: list[tuple[EntryCall | None, Kind]] = [(t, kind) for t in targets for kind in kinds]
        withheld = [(t, kind) for t in targets for kind in settings.kinds if kind not in kinds]
        runs = await analyzer.run_all(doc, wanted)
        if find_input:
            for entry in dict.fromkeys(e for e, _ in wanted if e is not None and e.returns is not None):
                await analyzer.find_input(doc, entry, check=analyzer.trust.allows(doc.path))
        header = [f"{path}: world {settings.world}"]
        header += [f"  {run.label} ({run.kind}): {run.ended}, {run.steps} steps, {run.seconds:.2f} s" for run in runs]
        header += [f"  {e.label if e else 'this script'} ({kind}): not run" for e, kind in withheld]
        if withheld:
            folder = os.path.dirname(os.path.realpath(path))
            header.append(
                f"  {folder} is not trusted: recording runs the file's code. `--trust` runs it this once, "
                f"`neural-dap trust {shlex.quote(folder)}` from now on"
            )
        if not runs and not withheld:
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
