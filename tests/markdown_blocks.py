"""The code blocks of the README and docs/, each with the check it is marked for.

Every fenced block in README.md and the task pages of docs/ stands right under a mark that says how
a test keeps it true (`tests/test_docs.py` reads them all; the editor tests run theirs):

    <!-- check: KIND -->
    ```json
    {...}
    ```

KIND is one word (`shell`, `launch`, `dap`, `mcp`, `terminal`, `emacs-dape`, ...) and may be followed
by notes for the check (`<!-- check: shell (python SCRIPT: the file exists) -->`). GitHub does not
show the mark.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# the pages a newcomer is sent to from the README, each by task
TASK_PAGES = (
    "time-travel.md",
    "asking-the-recording.md",
    "editors.md",
    "neural-world.md",
    "agents.md",
    "language-server.md",
    "recording.md",
    "benchmarks.md",
    "training.md",
    "scaling.md",
    "vllm-on-cpu.md",
    "development.md",
    "architecture.md",
)
PAGES = (ROOT / "README.md", *(ROOT / "docs" / name for name in TASK_PAGES))

_MARK = re.compile(r"<!--\s*check:\s*([\w-]+)[^>]*-->\s*\n")
_FENCE = re.compile(r"^( *)(`{3,})([^\n`]*)\n(.*?)\n\1\2[ \t]*$", re.S | re.M)


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    info: str  # the fence's info string (the language)
    kind: str | None  # the mark above it, None where there is none
    text: str

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text()
    found = []
    for fence in _FENCE.finditer(text):
        before = text[: fence.start()]
        marks = list(_MARK.finditer(before[-300:]))  # the last mark, if nothing stands between it and the fence
        kind = marks[-1].group(1) if marks and before[-300:][marks[-1].end() :].strip() == "" else None
        body = "\n".join(line[len(fence.group(1)) :] for line in fence.group(4).split("\n"))
        found.append(Block(page, before.count("\n") + 1, fence.group(3).strip(), kind, body))
    return found


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in blocks(page)]


def marked(kind: str) -> list[Block]:
    return [block for block in all_blocks() if block.kind == kind]
