"""The language server (pygls 2): values of recorded and predicted runs in the editor.

It follows the documents a client opens, runs their entries through the world models (on open, and
after edits once the typing stops), and answers inlay hints, hovers, code lenses and actions from
the analyzer's runs for the document's current version; diagnostics are published when runs end.
A request for hints while runs of the current version are still going waits for them (an edit
cancels them, and the request answers empty for a version that is gone); when runs end the server
asks the client to refresh its hints. Long work reports cancellable work-done progress.

Recordings execute the file, so they run unasked only in a trusted folder (lsp/trust.py); the first
time a folder would run, the server asks the user once (window/showMessageRequest) and remembers.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer

from neural_dap import __version__
from neural_dap.core.trust import TrustStoreError, canonical, covers
from neural_dap.lsp import views
from neural_dap.lsp.analyzer import Analyzer, Document, StaleRun, entry_from_arguments
from neural_dap.lsp.entries import EntryCall, EntryError
from neural_dap.lsp.runs import Kind, Run
from neural_dap.lsp.settings import LspSettings, SettingsError, settings_from
from neural_dap.lsp.trust import ACTIONS, WorkspaceTrust

log = logging.getLogger(__name__)
REPORT_EVERY = 0.25  # seconds between progress reports


def path_of(uri: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return unquote(parsed.path)
    name = os.path.basename(unquote(parsed.path)) or "untitled"
    return os.path.join(os.getcwd(), name if name.endswith(".py") else name + ".py")


class NeuralDapLanguageServer(LanguageServer):
    def __init__(self, settings: LspSettings | None = None) -> None:
        super().__init__("neural-dap", __version__)
        self.trust = WorkspaceTrust(roots=self.workspace_roots)
        self.analyzer = Analyzer(settings, trust=self.trust)
        self.questions: dict[str, asyncio.Task[None]] = {}  # folder -> the trust question being asked
        self.automatic: dict[str, tuple[int, asyncio.Task[None]]] = {}  # uri -> (version, its runs)
        self.progress_tasks: dict[str, asyncio.Task[Any]] = {}  # work-done token -> the work
        self.progress_documents: dict[str, str] = {}  # work-done token -> the document it works on
        self.tokens = itertools.count(1)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Work we cancelled is no error to show the user: an edit cancels the runs of the old
        version, and the client's answer to a request made for them (a progress bar) then finds its
        future cancelled. Anything else is shown."""
        cancelled = isinstance(error, (asyncio.CancelledError, concurrent.futures.CancelledError))
        answered_late = isinstance(error, (asyncio.InvalidStateError, concurrent.futures.InvalidStateError))
        if cancelled or (answered_late and str(error).startswith("CANCELLED")):
            log.debug("a cancelled request finished: %s", error)
            return
        super().report_server_error(error, source)

    # -- documents and automatic runs ---------------------------------------------------------------
    def document(self, uri: str) -> Document | None:
        """The analyzer's document for `uri`, as the last didOpen / didChange left it: reading it
        changes nothing."""
        return self.analyzer.documents.get(uri)

    def sync(self, uri: str) -> Document:
        """didOpen / didChange: the analyzer takes the editor's version; the old version's work
        stops now, not after the debounce pause."""
        known = self.analyzer.documents.get(uri)
        text_document = self.workspace.get_text_document(uri)
        version = text_document.version or 0
        if known is not None and known.version == version and known.text == text_document.source:
            return known
        return self.analyzer.update(uri, path_of(uri), version, text_document.source)

    def schedule(self, uri: str, delay: float) -> None:
        """Start this version's automatic runs after `delay` (an edit within it starts over)."""
        doc = self.document(uri)
        if doc is None:
            return
        old = self.automatic.pop(uri, None)
        if old is not None:
            old[1].cancel()
        task = asyncio.ensure_future(self._automatic(doc, delay))
        self.automatic[uri] = (doc.version, task)

    async def _automatic(self, doc: Document, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        wanted = self.analyzer.automatic(doc)
        if self.analyzer.withheld(doc):
            self.ask_trust(doc.path)
        if wanted:
            titles = ", ".join(_title(entry, kind) for entry, kind in wanted)
            try:
                await self.with_progress(titles, lambda report: self.analyzer.run_all(doc, wanted, report), doc.uri)
            except StaleRun:
                return  # a newer version has its own runs
        self.publish(doc)

    async def settled(self, doc: Document) -> bool:
        """Wait for this version's automatic runs; False when the document changed meanwhile."""
        pending = self.automatic.get(doc.uri)
        if pending is not None and pending[0] == doc.version:
            try:
                await asyncio.shield(pending[1])
            except (StaleRun, asyncio.CancelledError):
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise
                return False
        return self.analyzer.documents.get(doc.uri) is doc

    def publish(self, doc: Document) -> None:
        if self.analyzer.documents.get(doc.uri) is not doc:
            return
        self.text_document_publish_diagnostics(
            lsp.PublishDiagnosticsParams(
                uri=doc.uri, diagnostics=views.diagnostics(self.analyzer, doc), version=doc.version
            )
        )
        workspace = self.client_capabilities.workspace
        if workspace and workspace.inlay_hint and workspace.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)

    # -- trust --------------------------------------------------------------------------------------------
    def workspace_roots(self) -> list[str]:
        try:
            workspace = self.workspace
        except RuntimeError:  # before initialize
            return []
        uris = [folder.uri for folder in workspace.folders.values()] or [workspace.root_uri or ""]
        return [unquote(urlparse(uri).path) for uri in uris if uri.startswith("file:")]

    def ask_trust(self, path: str) -> None:
        """Ask once, where the client can show a question with answers, whether `path`'s folder may run."""
        window = self.client_capabilities.window
        if not (window and window.show_message and window.show_message.message_action_item):
            return
        if not self.trust.askable(path):
            return
        folder = self.trust.folder(path)
        self.trust.asked.add(folder)  # a second file of the folder opened meanwhile does not ask again
        self.questions[folder] = asyncio.ensure_future(self._ask(folder))

    async def _ask(self, folder: str) -> None:
        params = lsp.ShowMessageRequestParams(
            type=lsp.MessageType.Warning,
            message=self.trust.question(folder),
            actions=[lsp.MessageActionItem(title=title) for title in ACTIONS],
        )
        try:
            answer = await self.window_show_message_request_async(params)
        except Exception as exc:  # no answer is no trust
            log.debug("the trust question failed: %s", exc)
            answer = None
        finally:
            self.questions.pop(folder, None)
        try:
            self.trust.remember(folder, answer.title if answer else None)
        except TrustStoreError as exc:
            self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=str(exc)))
        self.trust_changed(folder)

    def trust_changed(self, folder: str) -> None:
        """Run again the open documents of `folder` that may now run (the others say why they do not)."""
        for uri, doc in list(self.analyzer.documents.items()):
            if not covers(folder, canonical(doc.path)):
                continue
            if self.trust.allows(doc.path):
                self.analyzer.forget_runs(uri)  # the predictions of `both` are checked against reality now
                self.schedule(uri, 0.0)
            else:
                self.publish(doc)

    # -- progress ---------------------------------------------------------------------------------------
    async def with_progress(
        self, title: str, work: Callable[[Callable[[int], None]], Awaitable[Any]], uri: str = ""
    ) -> Any:
        """Run `work(report)` under a cancellable work-done progress, where the client has them."""
        window = self.client_capabilities.window
        if not (window and window.work_done_progress):
            return await work(lambda steps: None)
        token = f"neural-dap-{next(self.tokens)}"
        try:
            await self.work_done_progress.create_async(token)
        except Exception as exc:  # a client may refuse; the work goes on without a bar
            log.debug("no progress bar: %s", exc)
            return await work(lambda steps: None)
        self.work_done_progress.begin(token, lsp.WorkDoneProgressBegin(title=f"neural-dap: {title}", cancellable=True))
        last = [0.0]

        def report(steps: int) -> None:
            now = time.monotonic()
            if now - last[0] >= REPORT_EVERY:
                last[0] = now
                self.work_done_progress.report(token, lsp.WorkDoneProgressReport(message=f"{steps} steps"))

        task = asyncio.ensure_future(work(report))
        self.progress_tasks[token] = task
        self.progress_documents[token] = uri
        try:
            return await task
        finally:
            self.progress_tasks.pop(token, None)
            self.progress_documents.pop(token, None)
            message = "cancelled" if task.cancelled() else "done"
            self.work_done_progress.end(token, lsp.WorkDoneProgressEnd(message=message))

    def cancel_progress(self, token: str | int) -> None:
        """The user cancelled one progress bar: that work, and the runs of its document only."""
        task = self.progress_tasks.get(str(token))
        if task is not None:
            task.cancel()
            uri = self.progress_documents.get(str(token))
            for key, pending in list(self.analyzer.pending.items()):
                if key[0] == uri:
                    pending.cancel()
                    self.analyzer.pending.pop(key, None)

    # -- commands -----------------------------------------------------------------------------------------
    async def run_command(self, kind: str, arguments: tuple[Any, ...]) -> dict:
        if not arguments or not isinstance(arguments[0], str):
            raise ValueError("neural-dap commands take [document URI, call text]")
        doc = self.document(arguments[0])
        if doc is None:
            raise ValueError(f"{arguments[0]} is not open")
        try:
            entry = entry_from_arguments(doc, list(arguments))
        except EntryError as exc:
            raise ValueError(str(exc)) from None
        if kind == "findInput":
            if entry is None:
                raise ValueError("finding an input needs a call with an output: f(...) -> VALUE")
            found = await self.with_progress(
                f"finding an input for {entry.returns}", lambda report: self.analyzer.find_input(doc, entry), doc.uri
            )
            self.show(views.found_text(found))
            self.publish(doc)
            return {"args": found.args, "verified": found.verified, "actual": found.actual, "error": found.error}
        run_kind: Kind = "recorded" if kind == "trace" else "neural"
        kinds: list[Kind] = [run_kind]
        if run_kind == "recorded" and self.analyzer.settings.world == "both":
            kinds.append("neural")
        runs: list[Run] = await self.with_progress(
            _title(entry, run_kind),
            lambda report: self.analyzer.run_all(doc, [(entry, k) for k in kinds], report),
            doc.uri,
        )
        self.analyzer.select(doc, entry, run_kind)
        self.publish(doc)
        run = runs[0]
        return {"label": run.label, "kind": run.kind, "ended": run.ended, "steps": run.steps, "error": run.error}

    def show(self, message: str) -> None:
        self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Info, message=message))

    # -- settings -------------------------------------------------------------------------------------------
    def apply_settings(self, raw: Any) -> None:
        try:
            settings = settings_from(raw, self.analyzer.settings)
        except SettingsError as exc:
            self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=str(exc)))
            return
        if settings == self.analyzer.settings:
            return
        self.analyzer.settings = settings
        for uri in list(self.analyzer.documents):
            self.analyzer.runs = {k: v for k, v in self.analyzer.runs.items() if k[0] != uri}
            self.schedule(uri, 0.0)


def _title(entry: EntryCall | None, kind: str) -> str:
    verb = "recording" if kind == "recorded" else "predicting"
    return f"{verb} {entry.label if entry else 'the script'}"


def create_server(
    settings: LspSettings | None = None, trusted_workspace: bool | None = None
) -> NeuralDapLanguageServer:
    server = NeuralDapLanguageServer(settings)
    server.trust.editor = trusted_workspace

    @server.feature(lsp.INITIALIZE)
    def initialize(params: lsp.InitializeParams) -> None:
        options = params.initialization_options
        if isinstance(options, dict) and isinstance(options.get("trustedWorkspace"), bool):
            # only from here, which the editor (or its user's config) writes, never from workspace
            # settings, which a repository can ship
            server.trust.editor = options["trustedWorkspace"]
        if options:
            server.apply_settings(options)

    @server.feature(lsp.INITIALIZED)
    async def initialized(params: lsp.InitializedParams) -> None:
        workspace = server.client_capabilities.workspace
        if workspace and workspace.configuration:
            try:
                answer = await server.workspace_configuration_async(
                    lsp.ConfigurationParams(items=[lsp.ConfigurationItem(section="neuralDap")])
                )
            except Exception as exc:  # a client that says it can and then cannot: keep what we have
                log.debug("workspace/configuration failed: %s", exc)
                return
            if answer and answer[0]:
                server.apply_settings(answer[0])

    @server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def did_change_configuration(params: lsp.DidChangeConfigurationParams) -> None:
        server.apply_settings(params.settings)

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: lsp.DidOpenTextDocumentParams) -> None:
        server.sync(params.text_document.uri)
        server.schedule(params.text_document.uri, 0.0)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: lsp.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        server.sync(uri)
        server.schedule(uri, server.analyzer.settings.debounce_ms / 1000)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: lsp.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        pending = server.automatic.pop(uri, None)
        if pending is not None:
            pending[1].cancel()
        server.analyzer.close(uri)

    @server.feature(lsp.TEXT_DOCUMENT_INLAY_HINT, lsp.InlayHintOptions(resolve_provider=False))
    async def inlay_hint(params: lsp.InlayHintParams) -> list[lsp.InlayHint]:
        doc = server.document(params.text_document.uri)
        if doc is None or not await server.settled(doc):
            return []
        return views.inlay_hints(server.analyzer, doc, params.range.start.line + 1, params.range.end.line + 1)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    async def hover(params: lsp.HoverParams) -> lsp.Hover | None:
        doc = server.document(params.text_document.uri)
        if doc is None or not await server.settled(doc):
            return None
        return views.hover(server.analyzer, doc, params.position.line, params.position.character)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_LENS, lsp.CodeLensOptions(resolve_provider=False))
    def code_lens(params: lsp.CodeLensParams) -> list[lsp.CodeLens]:
        doc = server.document(params.text_document.uri)
        return views.code_lenses(doc) if doc is not None else []

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION)
    def code_action(params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        doc = server.document(params.text_document.uri)
        if doc is None:
            return []
        return views.code_actions(doc, params.range.start.line + 1, params.range.end.line + 1)

    @server.feature(lsp.WINDOW_WORK_DONE_PROGRESS_CANCEL)
    def cancel(params: lsp.WorkDoneProgressCancelParams) -> None:
        server.cancel_progress(params.token)

    @server.feature(lsp.SHUTDOWN)
    async def shutdown(params: None) -> None:
        await server.analyzer.close_all()

    @server.command(views.TRACE)
    async def trace(*arguments: Any) -> dict:
        return await server.run_command("trace", arguments)

    @server.command(views.PREDICT)
    async def predict(*arguments: Any) -> dict:
        return await server.run_command("predict", arguments)

    @server.command(views.FIND_INPUT)
    async def find_input(*arguments: Any) -> dict:
        return await server.run_command("findInput", arguments)

    return server
