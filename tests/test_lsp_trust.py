"""Nothing runs that the user did not ask to run: the language server executes a file's code on its
own only in a trusted folder. A real client over stdio opens a file whose top level writes PWNED,
in a folder of a fresh state directory (XDG_STATE_HOME), and the server is watched: what it asks,
what it remembers across a restart, what runs; and the same for `lsp --check` and `neural-dap trust`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient

from neural_dap.core import trust

from .test_lsp import capabilities, diagnostics_of, hints, open_file

pytestmark = pytest.mark.slow

HOSTILE = textwrap.dedent(
    """\
    import pathlib
    pathlib.Path("PWNED").write_text("code ran on open")

    def f(x):  # neural-dap: f(1)
        return x + 1
    """
)
SERVER = [sys.executable, "-m", "neural_dap.cli.main", "lsp"]


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    return work


def environment(state: Path) -> dict[str, str]:
    return {**os.environ, "XDG_STATE_HOME": str(state)}


@contextlib.asynccontextmanager
async def server(
    state: Path,
    answer: str | None = None,
    who: str = "visual-studio-code",
    root: Path | None = None,
    configuration: dict | None = None,
    **options: object,
) -> AsyncIterator[LanguageClient]:
    """A language server over stdio with its own state directory; the client answers the trust
    question with `answer` (None: dismissed) and keeps the questions in `client.questions`."""
    client = await ClientServerConfig(server_command=SERVER, server_env=environment(state)).start()
    questions: list[lsp.ShowMessageRequestParams] = []
    client.questions = questions  # type: ignore[attr-defined]

    @client.feature(lsp.WINDOW_SHOW_MESSAGE_REQUEST)
    def ask(params: lsp.ShowMessageRequestParams) -> lsp.MessageActionItem | None:
        questions.append(params)
        return lsp.MessageActionItem(title=answer) if answer else None

    if configuration is not None:  # what workspace/configuration answers (a repository's settings)
        client.set_configuration(configuration, section="neuralDap")

    @client.feature(lsp.WORKSPACE_INLAY_HINT_REFRESH)
    def refresh(params: None) -> None:
        pass

    try:
        await client.initialize_session(
            lsp.InitializeParams(
                capabilities=capabilities(who),
                initialization_options=options or None,
                root_uri=root.as_uri() if root else None,
                workspace_folders=[lsp.WorkspaceFolder(uri=root.as_uri(), name=root.name)] if root else None,
            )
        )
        yield client
    finally:
        await client.shutdown_session()
        await client.stop()


async def opened(client: LanguageClient, path: Path, text: str = HOSTILE) -> list[lsp.Diagnostic]:
    """Open `path` and wait until the server has published what its automatic runs gave."""
    uri = open_file(client, path, text)
    return await diagnostics_of(client, uri)


async def until(condition, timeout: float = 60) -> None:
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.05)


def decisions(state: Path) -> list[tuple[str, str]]:
    return [(f.path, f.decision) for f in trust.load(trust.store_path(environment(state))).folders]


def untrusted_notice(found: list[lsp.Diagnostic]) -> lsp.Diagnostic:
    notices = [d for d in found if "neural-dap trust" in d.message]
    assert len(notices) == 1, [d.message for d in found]
    assert notices[0].severity == lsp.DiagnosticSeverity.Information
    return notices[0]


async def test_an_untrusted_folder_runs_nothing_asks_once_and_never_is_remembered_across_a_restart(state, folder):
    async with server(state, answer="Never", root=folder) as client:
        first, second = folder / "a.py", folder / "b.py"
        found = await opened(client, first)
        await opened(client, second)
        await until(lambda: decisions(state) == [(os.path.realpath(folder), "refused")])
        await asyncio.sleep(1)  # anything the answer started would have started by now
        assert not (folder / "PWNED").exists()
        assert len(client.questions) == 1  # two files of one folder: one question
        question = client.questions[0]
        assert os.path.realpath(folder) in question.message and question.message.startswith("Run neural-dap entries in")
        assert [a.title for a in question.actions] == ["Trust folder", "Run once", "Never"]
        assert os.path.realpath(folder) in untrusted_notice(found).message
        assert await hints(client, first.as_uri()) == {}
        # the lenses are still offered, and what the user asks for runs
        lenses = await client.text_document_code_lens_async(
            lsp.CodeLensParams(lsp.TextDocumentIdentifier(first.as_uri()))
        )
        assert "Trace f(1)" in {lens.command.title for lens in lenses}
    async with server(state, answer="Trust folder", root=folder) as client:
        found = await opened(client, folder / "a.py")
        await asyncio.sleep(1)
        assert client.questions == []  # asked before: Never holds
        assert "you chose Never" in untrusted_notice(found).message
        assert not (folder / "PWNED").exists()
        result = await client.workspace_execute_command_async(
            lsp.ExecuteCommandParams(command="neural-dap.trace", arguments=[(folder / "a.py").as_uri(), "f(1)"])
        )
        assert result["ended"] == "returned 2"
        assert (folder / "PWNED").exists()  # the user asked: it ran


async def test_trust_folder_runs_now_and_after_a_restart_without_asking_again(state, folder):
    async with server(state, answer="Trust folder", root=folder) as client:
        uri = open_file(client, folder / "a.py", HOSTILE)
        await until(lambda: (folder / "PWNED").exists())
        assert (await hints(client, uri))[5] == "returns 2"
        assert len(client.questions) == 1
    assert decisions(state) == [(os.path.realpath(folder), "trusted")]
    (folder / "PWNED").unlink()
    async with server(state, answer="Never", root=folder) as client:
        uri = open_file(client, folder / "sub.py", HOSTILE)
        assert (await hints(client, uri))[5] == "returns 2"
        assert client.questions == []
        assert (folder / "PWNED").exists()


async def test_run_once_runs_for_this_server_only_and_a_dismissed_question_runs_nothing(state, folder):
    async with server(state, answer="Run once", root=folder) as client:
        uri = open_file(client, folder / "a.py", HOSTILE)
        await until(lambda: (folder / "PWNED").exists())
        assert (await hints(client, uri))[5] == "returns 2"
    assert decisions(state) == []
    (folder / "PWNED").unlink()
    async with server(state, answer=None, root=folder) as client:  # asked again, and dismissed
        found = await opened(client, folder / "a.py")
        await until(lambda: len(client.questions) == 1)
        await asyncio.sleep(1)
        untrusted_notice(found)
        assert not (folder / "PWNED").exists()


async def test_a_client_without_questions_runs_nothing_in_an_untrusted_folder(state, folder):
    async with server(state, who="emacs") as client:  # eglot: no showMessageRequest with actions
        found = await opened(client, folder / "a.py")
        await asyncio.sleep(1)
        assert client.questions == []
        untrusted_notice(found)
        assert not (folder / "PWNED").exists()


async def test_a_folder_trusted_with_the_cli_runs_as_before(state, folder):
    assert cli(state, "trust", str(folder.parent)).returncode == 0  # a parent covers its subfolders
    async with server(state, answer="Never", root=folder) as client:
        uri = open_file(client, folder / "a.py", HOSTILE)
        assert (await hints(client, uri))[5] == "returns 2"
        assert client.questions == []
        assert (folder / "PWNED").exists()


async def test_the_editor_says_whether_it_trusts_the_workspace_in_initialization_options_only(state, folder):
    # a repository's settings (workspace/configuration) cannot claim trust
    async with server(state, configuration={"trustedWorkspace": True}, trustedWorkspace=False) as client:
        client.workspace_did_change_configuration(
            lsp.DidChangeConfigurationParams(settings={"neuralDap": {"trustedWorkspace": True}})
        )
        found = await opened(client, folder / "a.py")
        await asyncio.sleep(1)
        assert "editor does not trust" in found[0].message
        assert client.questions == []  # the editor has its own question
        assert not (folder / "PWNED").exists()
    async with server(state, answer="Never", root=folder, trustedWorkspace=True) as client:
        uri = open_file(client, folder / "a.py", HOSTILE)
        assert (await hints(client, uri))[5] == "returns 2"
        assert client.questions == []
        assert (folder / "PWNED").exists()
    (folder / "PWNED").unlink()
    # the editor speaks for its workspace only: a file from elsewhere is asked about
    elsewhere = folder.parent / "elsewhere"
    elsewhere.mkdir()
    async with server(state, answer="Never", root=folder, trustedWorkspace=True) as client:
        await opened(client, elsewhere / "a.py")
        await until(lambda: len(client.questions) == 1)
        assert os.path.realpath(elsewhere) in client.questions[0].message
        assert not (elsewhere / "PWNED").exists()


def cli(state: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "neural_dap.cli.main", *args],
        env=environment(state),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_prints_what_it_would_run_and_runs_it_only_with_trust(state, folder):
    path = folder / "a.py"
    path.write_text(HOSTILE)
    shown = cli(state, "lsp", "--check", str(path), cwd=folder)
    assert shown.returncode == 0, shown.stderr
    assert "f(1) (recorded): not run" in shown.stdout and "--trust" in shown.stdout
    assert not (folder / "PWNED").exists()
    ran = cli(state, "lsp", "--check", str(path), "--trust", cwd=folder)
    assert "f(1) (recorded): returned 2" in ran.stdout and "⟨returns 2⟩" in ran.stdout
    assert (folder / "PWNED").exists()
    (folder / "PWNED").unlink()
    assert cli(state, "trust", str(folder)).returncode == 0
    trusted = cli(state, "lsp", "--check", str(path), cwd=folder)
    assert "f(1) (recorded): returned 2" in trusted.stdout
    assert (folder / "PWNED").exists()


def test_the_trust_command_adds_lists_and_revokes_realpaths(state, tmp_path, folder):
    inner = folder / "inner"
    inner.mkdir()
    link = tmp_path / "link"
    link.symlink_to(folder)
    assert cli(state, "trust", "--list").stdout.splitlines()[1] == "no folder is trusted or refused"
    added = cli(state, "trust", str(link))  # by its realpath
    assert added.returncode == 0 and str(folder.resolve()) in added.stdout
    assert cli(state, "trust", cwd=inner).returncode == 0  # the current folder
    assert cli(state, "trust", "--revoke", str(inner)).returncode == 0
    listed = cli(state, "trust", "--list").stdout
    assert str(trust.store_path(environment(state))) in listed
    assert f"trusted  {folder.resolve()}" in listed
    store = trust.load(trust.store_path(environment(state)))
    assert trust.decision_for(store, inner / "x.py").decision == "trusted"  # subfolders are covered
    assert trust.decision_for(store, tmp_path / "x.py") is None
    assert oct(trust.store_path(environment(state)).stat().st_mode & 0o777) == "0o600"
    not_own = cli(state, "trust", "--revoke", str(inner))
    assert not_own.returncode == 1 and f"covered by {folder.resolve()}" in not_own.stderr
    revoked = cli(state, "trust", "--revoke", str(link))
    assert revoked.returncode == 0, revoked.stderr
    assert "no folder is trusted" in cli(state, "trust", "--list").stdout
    assert json.loads(trust.store_path(environment(state)).read_text()) == {"version": 1, "folders": []}
    assert cli(state, "trust", str(folder / "a.py")).returncode == 1  # a folder, not a file


def test_the_most_specific_decision_wins_and_a_broken_store_trusts_nothing(tmp_path):
    store = tmp_path / "state" / "trust.json"
    outer, inner = tmp_path / "outer", tmp_path / "outer" / "clone"
    inner.mkdir(parents=True)
    trust.decide(outer, "trusted", store)
    trust.decide(inner, "refused", store)
    assert trust.decision_for(trust.load(store), inner / "x.py").decision == "refused"
    assert trust.decision_for(trust.load(store), outer / "y.py").decision == "trusted"
    assert trust.decision_for(trust.load(store), tmp_path / "outerx" / "y.py") is None  # a prefix is no parent
    store.write_text("{not json")
    with pytest.raises(trust.TrustStoreError, match="fix or delete it"):
        trust.load(store)
    from neural_dap.lsp.trust import WorkspaceTrust

    assert not WorkspaceTrust(store=store).allows(str(outer / "y.py"))
