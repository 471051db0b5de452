"""The recorder's own imports while the program runs: found without the program's folders.

An import looks through the folders on `sys.path` with finders the import system keeps, one per
folder (`sys.path_importer_cache`), each holding its folder's listing until the folder's
modification time changes; the program's folder comes first. A replay answers the program's own
looks from the journal, but an import the recorder makes (its plumbing: `_queue` at a switch to
every thread, a lazy import in its own code) looks for real. One made in a replay, after the
recording had added a file to the program's folder, left that folder's finder holding the folder
as it is now, and the program's next import found no change where the recording had listed the
folder again: the replay made another call than the recording, and diverged. So an import made in
the recorder's context looks only in the interpreter's folders, through finders of its own.

Standard library only.
"""

from __future__ import annotations

import importlib.machinery as machinery
import os
import sys
from collections.abc import Callable, Sequence


class RecorderImports:
    """A meta path finder, before the path finder: a top-level module the recorder imports
    (`by_the_recorder()`) is looked for in `folders` only, by finders no code of the program's
    shares. Submodules are found in their package's folders as ever (never the program's)."""

    def __init__(self, folders: Sequence[str], by_the_recorder: Callable[[], bool]) -> None:
        loaders = [
            (machinery.ExtensionFileLoader, machinery.EXTENSION_SUFFIXES),
            (machinery.SourceFileLoader, machinery.SOURCE_SUFFIXES),
            (machinery.SourcelessFileLoader, machinery.BYTECODE_SUFFIXES),
        ]
        self._finders = [machinery.FileFinder(folder, *loaders) for folder in folders if os.path.isdir(folder)]
        self._by_the_recorder = by_the_recorder

    def find_spec(self, fullname: str, path=None, target=None):
        if path is not None or not self._by_the_recorder():
            return None
        for finder in self._finders:
            spec = finder.find_spec(fullname, target)
            if spec is not None and spec.loader is not None:  # (a namespace portion: the path finder's)
                return spec
        return None

    def invalidate_caches(self) -> None:
        for finder in self._finders:
            finder.invalidate_caches()


def install(folders: Sequence[str], by_the_recorder: Callable[[], bool]) -> None:
    """Put a RecorderImports on `sys.meta_path`, right before the path finder (builtin and frozen
    modules are found first, as ever)."""
    meta = sys.meta_path
    at = next((k for k, finder in enumerate(meta) if finder is machinery.PathFinder), len(meta))
    meta.insert(at, RecorderImports(folders, by_the_recorder))
