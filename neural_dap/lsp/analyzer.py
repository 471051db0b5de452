"""Runs per document version: what to run, running it through the world models, and caching it.

The language server and `neural-dap lsp --check` share this. A run is cached per (document
version, entry, world kind); an edit makes a new version, and the runs of older versions are
cancelled and forgotten. Each function shows one selected entry (the first one found, or the one
the user last asked for), taken in the kind the settings or the user chose.

asyncio, not anyio, for the tasks here: pygls runs its handlers on an asyncio loop, and a run
outlives the request that started it (hints of a run started on open are asked for later).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass, field

import msgspec

from neural_dap.core.world import Entry, LaunchSpec
from neural_dap.debugger.launch import LaunchRequest, build_launch
from neural_dap.lsp.entries import DocumentPlan, EntryCall, EntryError, FunctionInfo, parse_call, plan_document
from neural_dap.lsp.runs import FoundInput, Kind, Progress, Run, find_input, run_world
from neural_dap.lsp.settings import LspSettings
from neural_dap.lsp.trust import WorkspaceTrust
from neural_dap.trace.recorder import Limits, Program, record_async
from neural_dap.world.factory import ClientPool, create_world

SCRIPT = ""  # the selection key of the whole script (functions use their names)


@dataclass
class Document:
    uri: str
    path: str  # where the program says it is (an unsaved document gets a made-up path)
    version: int
    text: str
    plan: DocumentPlan = field(default_factory=DocumentPlan)


@dataclass
class Selection:
    entry: EntryCall | None  # None: the whole script
    kind: Kind


class StaleRun(Exception):
    """The document changed while the run went: its result belongs to no version any more."""


RunKey = tuple[str, int, str, str]  # uri, version, kind, entry key ("" for the script)


class Analyzer:
    def __init__(
        self, settings: LspSettings | None = None, pool: ClientPool | None = None, trust: WorkspaceTrust | None = None
    ) -> None:
        self.settings = settings or LspSettings()
        self.trust = trust or WorkspaceTrust()  # what may run unasked: the user's store alone by default
        self.pool = pool or ClientPool()
        self.documents: dict[str, Document] = {}
        self.runs: dict[RunKey, Run] = {}
        self.pending: dict[RunKey, asyncio.Task[Run]] = {}
        self.selections: dict[str, dict[str, Selection]] = {}  # uri -> function name (or SCRIPT) -> what to show
        self.found: dict[tuple[str, int], list[FoundInput]] = {}

    # -- documents ------------------------------------------------------------------------------------
    def update(self, uri: str, path: str, version: int, text: str) -> Document:
        """A new version of a document: older versions' work is cancelled and their runs forgotten."""
        doc = Document(uri, path, version, text, plan_document(text))
        self.documents[uri] = doc
        self._forget(uri, keep=version)
        chosen = self.selections.setdefault(uri, {})
        for name in list(chosen):
            if name != SCRIPT and doc.plan.function(name) is None:
                del chosen[name]
        return doc

    def close(self, uri: str) -> None:
        self.documents.pop(uri, None)
        self.selections.pop(uri, None)
        self._forget(uri, keep=None)

    def _forget(self, uri: str, keep: int | None) -> None:
        for key in [k for k in self.pending if k[0] == uri and k[1] != keep]:
            self.pending.pop(key).cancel()
        for key in [k for k in self.runs if k[0] == uri and k[1] != keep]:
            del self.runs[key]
        for found_key in [k for k in self.found if k[0] == uri and k[1] != keep]:
            del self.found[found_key]

    def forget_runs(self, uri: str) -> None:
        """Drop every run of `uri` (the settings or the folder's trust changed: they run again)."""
        for key in [k for k in self.pending if k[0] == uri]:
            self.pending.pop(key).cancel()
        self.runs = {key: run for key, run in self.runs.items() if key[0] != uri}

    # -- what runs --------------------------------------------------------------------------------------
    def automatic(self, doc: Document) -> list[tuple[EntryCall | None, Kind]]:
        """The runs the settings ask for on open and on edit, less the ones the folder's trust withholds."""
        kinds = self.automatic_kinds(doc)
        if self.settings.auto_run == "off" or not kinds:
            return []
        wanted: list[tuple[EntryCall | None, Kind]] = []
        for function in doc.plan.functions:
            selection = self.selection(doc, function)
            if selection is not None:
                wanted.extend((selection.entry, kind) for kind in kinds)
        if self.settings.auto_run == "all" and doc.plan.script:
            wanted.extend((None, kind) for kind in kinds)
        return wanted

    def automatic_kinds(self, doc: Document) -> tuple[Kind, ...]:
        """The settings' kinds that may run unasked: a recording executes the file, so only where
        the folder is trusted; a prediction only reads it."""
        if "recorded" not in self.settings.kinds or self.trust.allows(doc.path):
            return self.settings.kinds
        return tuple(kind for kind in self.settings.kinds if kind != "recorded")

    def withheld(self, doc: Document) -> bool:
        """Whether the folder's trust keeps a recording from running that the settings ask for."""
        if self.settings.auto_run == "off" or "recorded" not in self.settings.kinds:
            return False
        declared = any(function.entries for function in doc.plan.functions)
        script = self.settings.auto_run == "all" and doc.plan.script
        return (declared or script) and not self.trust.allows(doc.path)

    def selection(self, doc: Document, function: FunctionInfo) -> Selection | None:
        chosen = self.selections.get(doc.uri, {}).get(function.name)
        if chosen is not None:
            return chosen
        if not function.entries:
            return None
        return Selection(function.entries[0], self._default_kind(doc))

    def _default_kind(self, doc: Document) -> Kind:
        """What a function shows until the user picks: the first kind that runs unasked (in `both`
        and an untrusted folder, the prediction), else the settings' first."""
        return (self.automatic_kinds(doc) or self.settings.kinds)[0]

    def select(self, doc: Document, entry: EntryCall | None, kind: Kind) -> None:
        name = entry.function if entry is not None else SCRIPT
        self.selections.setdefault(doc.uri, {})[name] = Selection(entry, kind)

    def shown(self, doc: Document) -> list[tuple[Selection, tuple[int, int] | None]]:
        """What each function (and the script) shows, with the lines it owns (None: the rest)."""
        out: list[tuple[Selection, tuple[int, int] | None]] = []
        for function in doc.plan.functions:
            selection = self.selection(doc, function)
            if selection is not None:
                out.append((selection, (function.line, function.end_line)))
        script = self.selections.get(doc.uri, {}).get(SCRIPT)
        if script is None and self.settings.auto_run == "all" and doc.plan.script:
            script = Selection(None, self._default_kind(doc))
        if script is not None:
            out.append((script, None))
        return out

    def result(self, doc: Document, entry: EntryCall | None, kind: str) -> Run | None:
        return self.runs.get((doc.uri, doc.version, kind, entry.key if entry else ""))

    # -- running ------------------------------------------------------------------------------------------
    async def run(self, doc: Document, entry: EntryCall | None, kind: Kind, progress: Progress | None = None) -> Run:
        """The run of `entry` in `kind` for this version: cached, shared with a run already going."""
        key = (doc.uri, doc.version, kind, entry.key if entry else "")
        done = self.runs.get(key)
        if done is not None:
            return done
        task = self.pending.get(key)
        if task is None:
            task = asyncio.ensure_future(self._run(doc, entry, kind, progress))
            self.pending[key] = task
        try:
            result = await asyncio.shield(task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and current is not None and not current.cancelling():
                raise StaleRun(f"{doc.uri} changed while {entry.label if entry else 'the script'} ran") from None
            raise
        finally:
            if task.done() and self.pending.get(key) is task:
                del self.pending[key]
        if self.documents.get(doc.uri) is doc:
            self.runs[key] = result
        return result

    async def run_all(self, doc: Document, wanted: list[tuple[EntryCall | None, Kind]], progress=None) -> list[Run]:
        return list(await asyncio.gather(*(self.run(doc, entry, kind, progress) for entry, kind in wanted)))

    async def _run(self, doc: Document, entry: EntryCall | None, kind: Kind, progress: Progress | None) -> Run:
        launch = self.launch(doc, entry, kind)
        world = create_world(launch, self.pool)
        if kind == "recorded":
            return await run_world(
                world, launch, kind, entry, action="step_into", max_steps=self.settings.max_steps, progress=progress
            )
        return await run_world(
            world, launch, kind, entry, action="step_over", max_steps=self.settings.max_predictions, progress=progress
        )

    def launch(self, doc: Document, entry: EntryCall | None, kind: Kind, returns: str | None = None) -> LaunchSpec:
        settings = self.settings
        # (a trusted folder's code runs as the user would run it: trust decides, lsp/trust.py)
        options: dict = {"recording": "full", "limits": self._limits()}
        if kind == "neural":
            options["model"] = settings.model
            # reconciling records the file: only where it may run unasked
            if settings.world == "both" and returns is None and self.trust.allows(doc.path):
                options.update(reconcile="recorded", trust="reality")
        if entry is None:
            spec_entry = None
        elif returns is not None:
            spec_entry = Entry(entry.function, returns=returns)
        else:
            spec_entry = Entry(entry.function, entry.args)
        directory = os.path.dirname(doc.path)
        wanted = LaunchRequest(
            program=doc.path,
            source=doc.text,
            entry=spec_entry,
            cwd=directory if os.path.isdir(directory) else None,
            world="recorded" if kind == "recorded" else "neural",
            python=settings.python,
            options=options,
        )
        return build_launch(wanted).spec  # built as every front end builds one

    def _limits(self) -> dict:
        limits = {"maxEvents": self.settings.max_steps + 1, "wallTime": 10}
        if isinstance(self.settings.limits, dict):
            limits.update(self.settings.limits)
        return limits

    async def find_input(self, doc: Document, entry: EntryCall, check: bool = True) -> FoundInput:
        """An input for `entry.returns`, predicted backwards by the model and, with `check`, checked by
        a real run."""
        if entry.returns is None:
            return FoundInput(entry, None, error="no output to start from: write `-> VALUE` after the call")
        launch = self.launch(doc, entry, "neural", returns=entry.returns)
        world = create_world(launch, self.pool)

        async def verify(args: str) -> str | None:
            program = Program(
                doc.path, source=doc.text, entry=entry.function, entry_args=args, literal_args=True, cwd=launch.cwd
            )
            recording = await record_async(
                program, Limits(wall_time=5.0, max_events=self.settings.max_steps), python=self.settings.python
            )
            return recording.return_value

        found = await find_input(world, launch, entry, doc.text, verify if check else None)
        if self.documents.get(doc.uri) is doc:
            self.found.setdefault((doc.uri, doc.version), []).append(found)
        return found

    async def close_all(self) -> None:
        for task in self.pending.values():
            task.cancel()
        self.pending.clear()
        await self.pool.close()


def entry_from_arguments(doc: Document, arguments: list) -> EntryCall | None:
    """A command's arguments: [uri, call text] (the call may end in `-> VALUE`), or [uri] for the script."""
    if len(arguments) < 2 or arguments[1] in (None, ""):
        return None
    entry = parse_call(str(arguments[1]), origin="command")
    function = doc.plan.function(entry.function)
    if function is None:
        raise EntryError(f"{entry.function} is not a function of this document")
    declared = next((e for e in function.entries if e.key == entry.key), None)
    if declared is not None:
        return declared if entry.returns is None else msgspec.structs.replace(declared, returns=entry.returns)
    return msgspec.structs.replace(entry, line=function.line)
