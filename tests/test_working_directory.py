"""The adapter started in a project's folder (nvim-dap and Emacs dape start it in the editor's
working directory): a project's own modules named like the standard library's there (`json.py`,
`random.py`, a beginner's `socket.py`) are the program's business, never the debugger's. Both the
adapter (`python -m neural_dap adapter`) and the recording child import the standard library's,
and the program still finds the modules beside its script, as a plain run does."""

from __future__ import annotations

import sys
import textwrap

import pytest

from neural_dap.dapwire.client import adapter_command, spawn
from neural_dap.trace.recorder import Program, record_skeleton

from .dap_helpers import TIMEOUT, start, step, where

SHADOWS = ("json", "random", "socket", "threading", "types")


def _project(tmp_path):
    """A working directory full of modules that shadow the standard library's (importing one
    fails loudly), and a program in a folder below it with a helper module of its own."""
    for name in SHADOWS:
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('the project\\'s own {name}.py was imported')\n")
    app = tmp_path / "app"
    app.mkdir()
    (app / "helper.py").write_text("GREETING = 'hello'\n")
    program = app / "main.py"
    program.write_text(
        textwrap.dedent(
            """\
            import helper

            words = [helper.GREETING, "world"]
            print(" ".join(words))
            """
        )
    )
    return program


def test_the_recording_child_imports_the_standard_library_not_the_working_directorys(tmp_path, monkeypatch):
    program = _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    rec = record_skeleton(Program(path=str(program)))
    try:
        assert rec.outcome.kind == "finished", rec.outcome
        assert rec.stdout == "hello world\n"
    finally:
        rec.close()


@pytest.mark.anyio
async def test_the_adapter_started_in_the_project_folder_debugs_a_program_there(tmp_path):
    program = _project(tmp_path)
    async with spawn(adapter_command(sys.executable), timeout=TIMEOUT, cwd=str(tmp_path)) as c:
        await start(c, {"program": str(program)}, breakpoints={str(program): [{"line": 4}]})
        shown = {"helper": f"<module 'helper' from '{program.parent / 'helper.py'}'>", "words": "['hello', 'world']"}
        assert await where(c) == ("<module>", 4, shown)
        assert await step(c, "continue") == ("end", ("<module>", 4, shown))
        await c.call("continue", {"threadId": 1})
        assert (await c.wait_event("exited"))["body"]["exitCode"] == 0
        outputs = [e["body"]["output"] for e in c.events_named("output") if e["body"].get("category") == "stdout"]
        assert outputs == ["hello world\n"]


def test_a_python_child_of_the_program_records_itself_there_too(tmp_path, monkeypatch):
    """A Python process the program starts (`subProcess`: it records itself, started through a
    `-c` boot that puts the working folder on sys.path) imports the standard library's too."""
    from neural_dap.trace.children import list_children, new_children_folder

    program = _project(tmp_path)
    (program.parent / "child.py").write_text("import helper\nprint(helper.GREETING + ' from the child')\n")
    parent = program.parent / "parent.py"
    parent.write_text(
        "import subprocess, sys\n"
        "done = subprocess.run([sys.executable, 'app/child.py'], capture_output=True, text=True)\n"
        "print(done.stdout.strip(), done.returncode)\n"
    )
    monkeypatch.chdir(tmp_path)
    folder = new_children_folder()
    rec = record_skeleton(Program(path=str(parent), cwd=str(tmp_path), children=folder))
    try:
        assert rec.outcome.kind == "finished", rec.outcome
        assert rec.stdout == "hello from the child 0\n"
        assert [child.name.split(" ")[0] for child in list_children(folder)] == ["child.py"]
    finally:
        rec.close()


@pytest.mark.anyio
async def test_the_debugpy_peer_started_in_the_project_folder_stops_in_the_program(tmp_path, monkeypatch):
    """Reconciliation against debugpy (`reconcile: debugpy`) starts debugpy's adapter beside the
    session: in the project's folder too, it imports the standard library's modules."""
    pytest.importorskip("debugpy")
    from neural_dap.reality.debugpy_peer import DebugpyPeer

    program = _project(tmp_path)
    monkeypatch.chdir(tmp_path)
    peer = DebugpyPeer(str(program), breakpoints=(4,))
    try:
        real = await peer.start()
        assert real is not None and (real.function, real.frames[0][1]) == ("<module>", 4)
        assert real.locals["words"] == "['hello', 'world']"
    finally:
        await peer.close()
