"""Whether the language server may run a document's code without being asked.

Recording a run imports the module, so its top level runs: opening a file would run whatever it
holds. Automatic runs of the recorded world therefore happen only in a trusted folder: one in the
user's trust store (core/trust.py), one answered "Run once" in this server process, or a workspace
the editor itself trusts (`trustedWorkspace` in initializationOptions, e.g. VS Code's Workspace
Trust; it is read from there only, never from workspace settings, which a repository can ship).
Neural runs never execute the file; what the user asks for (a lens, a command) runs anyway.

The store is read on each question, not cached: `neural-dap trust` in a terminal counts at once.
"""

from __future__ import annotations

import logging
import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from neural_dap.core.trust import TrustStoreError, canonical, covers, decide, decision_for, load

log = logging.getLogger(__name__)

Verdict = Literal["trusted", "refused", "unknown", "editor"]  # editor: the editor said it does not trust it
TRUST, ONCE, NEVER = "Trust folder", "Run once", "Never"
ACTIONS = (TRUST, ONCE, NEVER)


def _no_roots() -> list[str]:
    return []


@dataclass
class WorkspaceTrust:
    store: Path | None = None  # None: the user's store (core.trust.store_path())
    editor: bool | None = None  # the editor's own verdict on its workspace (trustedWorkspace)
    roots: Callable[[], list[str]] = _no_roots  # the workspace folders, as paths
    once: set[str] = field(default_factory=set)  # folders answered "Run once" (this process)
    asked: set[str] = field(default_factory=set)  # folders asked about by this process: asked once only

    def verdict(self, path: str) -> Verdict:
        real = canonical(path)
        if self.editor is not None:
            roots = [canonical(root) for root in self.roots()]
            # the editor speaks for its workspace; a file opened from elsewhere is judged as without it
            if not roots or any(covers(root, real) for root in roots):
                return "trusted" if self.editor else "editor"
        if any(covers(folder, real) for folder in self.once):
            return "trusted"
        try:
            decided = decision_for(load(self.store), real)
        except TrustStoreError as exc:
            log.warning("%s; nothing is trusted", exc)
            return "unknown"
        return decided.decision if decided is not None else "unknown"

    def allows(self, path: str) -> bool:
        return self.verdict(path) == "trusted"

    def folder(self, path: str) -> str:
        """The folder a question about `path` names: its innermost workspace folder, else its own."""
        real = canonical(path)
        roots = [canonical(root) for root in self.roots()]
        inside = [root for root in roots if covers(root, real)]
        return max(inside, key=len) if inside else os.path.dirname(real)

    def askable(self, path: str) -> bool:
        return self.verdict(path) == "unknown" and self.folder(path) not in self.asked

    def remember(self, folder: str, answer: str | None) -> None:
        """The user's answer about `folder`: kept in the store, or for this process (raises
        TrustStoreError where the store cannot be written; "Run once" holds then anyway)."""
        self.asked.add(folder)
        if answer == ONCE:
            self.once.add(folder)
        elif answer == TRUST:
            self.once.add(folder)  # holds for this process even if the store cannot be written
            decide(folder, "trusted", self.store)
        elif answer == NEVER:
            decide(folder, "refused", self.store)

    def question(self, folder: str) -> str:
        return (
            f"Run neural-dap entries in {folder}? Opening a Python file there runs the calls it declares "
            "(`# neural-dap: f(...)` comments, doctests), and with them the module's top-level code, on "
            "this machine. Trust only code you would run yourself."
        )

    def explain(self, path: str) -> str:
        """Why this file's entries do not run on their own, and how to make them."""
        verdict = self.verdict(path)
        if verdict == "editor":
            return (
                "neural-dap runs nothing on its own in a workspace the editor does not trust: the Trace "
                "lenses run an entry when you ask; trust the workspace to run entries on open"
            )
        folder = self.folder(path)
        why = "you chose Never for it" if verdict == "refused" else "it is not trusted"
        return (
            f"neural-dap runs nothing on its own in {folder} ({why}): the Trace lenses run an entry when "
            f"you ask; `neural-dap trust {shlex.quote(folder)}` runs entries on open (then edit or reopen the file)"
        )
