"""The adapter's side of the journal (`trace/_journal.c`): where the library is and how a recording
child gets it. The child preloads it (LD_PRELOAD, scoped to that one process: the child takes it out
of the environment the program sees), so that what the program receives from the world is journaled
as it enters and a replay reads it back instead of touching the world (see child/journal.py).

Linux only. Where the library is missing (another platform, a build without a C compiler) recordings
are made in full: every state kept as it happens, nothing ever replayed.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from pathlib import Path

# What a recording child with a skeleton ends with when the library would not load in it (another
# architecture's interpreter, say): the program has not run yet, so it is recorded in full instead.
# (The same text as child/runner.py's NO_JOURNAL: the child imports nothing from here.)
NO_JOURNAL = "the journal could not be loaded into the recording process"


@functools.cache
def library() -> str | None:
    """The journal library's path, fit for LD_PRELOAD (no space or colon in it), or None."""
    if not sys.platform.startswith("linux"):
        return None
    found = sorted(Path(__file__).resolve().parent.glob("_journal*.so"))
    if not found:
        return None
    path = str(found[0])
    if " " in path or ":" in path:  # LD_PRELOAD splits on both: reach it through a plain name
        folder = Path(tempfile.gettempdir()) / f"neural-dap-journal-{os.getuid()}"
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            link = folder / "libjournal.so"
            if not link.exists():
                link.symlink_to(path)
            path = str(link)
        except OSError:
            return None
        if " " in path or ":" in path:
            return None
    return path


def preload(env: dict[str, str]) -> str | None:
    """Put the library into `env`'s LD_PRELOAD (first); returns the value the program must see
    (what LD_PRELOAD was, or None)."""
    given = env.get("LD_PRELOAD")
    path = library()
    if path is not None:
        env["LD_PRELOAD"] = f"{path} {given}" if given else path
    return given


class JournalUnavailable(Exception):
    """A recording that will be replayed needs the journal, and it cannot be had here."""
