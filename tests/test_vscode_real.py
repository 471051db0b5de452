"""The extension in a real VS Code: code-server 4.100.3 (VS Code 1.100.3) in headless Chromium, driven
by Playwright as a user would: install the built .vsix, open a workspace, debug, time-travel with VS
Code's buttons and the extension's own, a conditional breakpoint, the program's output, the session
summary, the language server's lenses and hints; no error notifications, no adapter left behind.

`scripts/setup-e2e.sh` installs what it needs (CI runs it); without it the test skips. Screenshots go
to $NEURAL_DAP_ARTIFACTS when set (.ci/run sets .ci/artifacts), else to the test's temporary folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from .conftest import ROOT, SQUARES_PROGRAM, adapter_processes

pytestmark = pytest.mark.slow

CODE_SERVER = ROOT / ".e2e" / "node_modules" / ".bin" / "code-server"
VSIX = ROOT / "vscode-extension" / "neural-dap.vsix"
SERVE = ["--auth", "none", "--disable-telemetry", "--disable-update-check", "--disable-workspace-trust"]
CALC = textwrap.dedent(
    """\
    def total(xs):  # neural-dap: total([3, 1, 2])
        s = 0
        for x in xs:
            s += x
        return s
    """
)


def _tools() -> tuple[str, object]:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    missing = [
        what
        for what, ok in (
            ("code-server (scripts/setup-e2e.sh)", CODE_SERVER.exists()),
            ("Debian's chromium (scripts/setup-e2e.sh)", chromium),
            ("the built extension (cd vscode-extension && npm run package)", VSIX.exists()),
        )
        if not ok
    ]
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing.append("Python Playwright (scripts/setup-e2e.sh)")
        sync_playwright = None  # type: ignore[assignment]
    if missing:
        pytest.skip("the real-VS-Code test needs " + ", ".join(missing))
    return str(chromium), sync_playwright


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Editor:
    """The page of a running code-server, with the few gestures the test needs."""

    def __init__(self, page, shots: Path) -> None:
        self.page = page
        self.shots = shots
        self.count = 0

    def shot(self, name: str) -> None:
        self.count += 1
        self.page.screenshot(path=str(self.shots / f"{self.count:02d}-{name}.png"))

    def open(self, name: str) -> None:
        self.page.keyboard.press("Control+p")
        self.page.wait_for_selector(".quick-input-widget input", state="visible")
        self.page.keyboard.type(name)
        # Enter before the file search answers opens nothing: wait for the file among the results
        self.page.wait_for_selector(f'.quick-input-list .monaco-list-row[aria-label*="{name}"]', timeout=20_000)
        time.sleep(0.3)
        self.page.keyboard.press("Enter")
        self.page.wait_for_selector(f'.tab[aria-label^="{name}"]', timeout=20_000)

    def command(self, title: str, then_type: str | None = None) -> None:
        self.page.keyboard.press("F1")
        self.page.wait_for_selector(".quick-input-widget input", state="visible")
        self.page.keyboard.type(title)
        time.sleep(0.7)
        self.page.keyboard.press("Enter")
        if then_type is not None:
            time.sleep(0.7)
            self.page.keyboard.type(then_type)
            self.page.keyboard.press("Enter")

    def button(self, label: str) -> None:
        self.page.click(f'.debug-toolbar .action-label[aria-label^="{label}"]', timeout=20_000)

    def toolbar(self) -> list[str]:
        return self.page.eval_on_selector_all(
            ".debug-toolbar .action-label", "els => els.map(e => e.getAttribute('aria-label'))"
        )

    def top_frame(self) -> tuple[str, int] | None:
        rows = self.page.eval_on_selector_all(".debug-call-stack .stack-frame", "els => els.map(e => e.innerText)")
        if not rows:
            return None
        match = re.search(r"^(.*?)\s*prog\.py\s*(\d+):\d+", rows[0].replace("\n", " "))
        return (match.group(1).strip(), int(match.group(2))) if match else None

    def wait_line(self, line: int, timeout: float = 30.0) -> tuple[str, int]:
        deadline = time.monotonic() + timeout
        frame = None
        while time.monotonic() < deadline:
            frame = self.top_frame()
            if frame is not None and frame[1] == line:
                return frame
            time.sleep(0.2)
        self.shot(f"not-at-line-{line}")
        raise AssertionError(f"expected to stop at line {line}, the call stack shows {frame}")

    def variables(self) -> str:
        return " ".join(
            self.page.eval_on_selector_all(".debug-variables .monaco-list-row", "els => els.map(e => e.innerText)")
        )

    def wait_variables(self, pattern: str, timeout: float = 20.0) -> str:
        """The Variables view fills in after the stop: wait until it shows `pattern`."""
        deadline = time.monotonic() + timeout
        seen = ""
        while time.monotonic() < deadline:
            seen = self.variables()
            if re.search(pattern, seen):
                return seen
            time.sleep(0.2)
        self.shot("variables")
        raise AssertionError(f"the Variables view does not show {pattern!r}: {seen!r}")

    def text(self, selector: str) -> str:
        return " ".join(self.page.eval_on_selector_all(selector, "els => els.map(e => e.innerText)"))

    def wait_text(self, selector: str, wanted: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        seen = ""
        while time.monotonic() < deadline:
            seen = self.text(selector).replace("\xa0", " ")
            if wanted in seen:
                return seen
            time.sleep(0.3)
        raise AssertionError(f"{wanted!r} did not appear in {selector}: {seen[-500:]!r}")

    def errors(self) -> list[str]:
        return self.page.eval_on_selector_all(
            ".notifications-toasts .notification-toast",
            "els => els.filter(e => e.querySelector('.codicon-error')).map(e => e.textContent)",
        )


@pytest.fixture
def editor(tmp_path):
    chromium, sync_playwright = _tools()
    shots = Path(os.environ.get("NEURAL_DAP_ARTIFACTS", tmp_path)) / "vscode-real"
    shots.mkdir(parents=True, exist_ok=True)
    workspace = tmp_path / "workspace"
    (workspace / ".vscode").mkdir(parents=True)
    (workspace / "prog.py").write_text(SQUARES_PROGRAM)
    (workspace / "calc.py").write_text(CALC)
    launch = {
        "type": "neural-python",
        "request": "launch",
        "name": "neural-dap: time travel",
        "program": "${workspaceFolder}/prog.py",
        "stopOnEntry": True,
    }
    (workspace / ".vscode" / "launch.json").write_text(json.dumps({"version": "0.2.0", "configurations": [launch]}))
    user = tmp_path / "user"
    (user / "User").mkdir(parents=True)
    settings = {
        "workbench.startupEditor": "none",
        "security.workspace.trust.enabled": False,
        "telemetry.telemetryLevel": "off",
        "update.mode": "none",
        "workbench.tips.enabled": False,
        "extensions.ignoreRecommendations": True,
        "chat.disableAIFeatures": True,
        "neuralDap.python": sys.executable,
    }
    (user / "User" / "settings.json").write_text(json.dumps(settings))
    extensions = tmp_path / "extensions"
    common = ["--extensions-dir", str(extensions), "--user-data-dir", str(user)]
    installed = subprocess.run(
        [str(CODE_SERVER), *common, "--install-extension", str(VSIX)], capture_output=True, text=True, timeout=180
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    port = _free_port()
    log = open(tmp_path / "code-server.log", "w")
    server = subprocess.Popen(
        [str(CODE_SERVER), *SERVE, "--bind-addr", f"127.0.0.1:{port}", *common, str(workspace)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.3)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/?folder={workspace}")
            page.wait_for_selector(".monaco-workbench", timeout=90_000)
            time.sleep(2)
            ed = Editor(page, shots)
            try:
                yield ed
            finally:
                ed.shot("last")
                browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(20)
        log.close()


def test_a_user_debugs_and_time_travels_in_a_real_vscode(editor):
    ed = editor
    ed.open("prog.py")
    ed.page.keyboard.press("F5")
    ed.page.wait_for_selector(".debug-toolbar", timeout=60_000)
    ed.wait_text(".part.sidebar", "Paused on entry")
    assert ed.wait_line(1) == ("<module>", 1)
    ed.shot("entry")
    # the extension's buttons sit right after VS Code's Step Back, before Reverse
    labels = [label.split(" (")[0] for label in ed.toolbar()]
    at = labels.index("Step Back")
    assert labels[at : at + 4] == ["Step Back", "Step Back Into", "Step Back Out", "Reverse"], labels

    ed.button("Step Over")
    ed.wait_line(6)
    ed.button("Step Over")
    ed.wait_line(14)
    ed.button("Step Into")
    assert ed.wait_line(7)[0] == "main"
    ed.wait_variables(r"limit\s*[:=]?\s*4")
    ed.button("Step Over")
    ed.wait_line(8)
    ed.button("Step Over")
    ed.wait_line(9)
    ed.button("Step Into")
    assert ed.wait_line(2)[0] == "square"
    ed.wait_variables(r"x\s*[:=]?\s*0")
    ed.shot("in-square")
    ed.button("Step Back Out")  # the extension's: back to the line that made the call
    assert ed.wait_line(9)[0] == "main"
    ed.button("Step Back")
    ed.wait_line(8)
    ed.shot("stepped-back")

    # a conditional breakpoint, set the way a user does it
    ed.page.click(".editor-group-container .monaco-editor .view-lines")
    ed.page.keyboard.press("Control+g")
    ed.page.keyboard.type("2")
    ed.page.keyboard.press("Enter")
    ed.command("Debug: Add Conditional Breakpoint", then_type="x == 3")
    ed.button("Continue")
    assert ed.wait_line(2)[0] == "square"
    ed.wait_variables(r"x\s*[:=]?\s*3")
    ed.shot("conditional-breakpoint")
    ed.button("Step Back Out")
    ed.wait_line(9)
    ed.button("Step Over")  # the step runs square(3), and its breakpoint stops it, as in any debugger
    assert ed.wait_line(2)[0] == "square"
    ed.button("Step Out")
    assert ed.wait_line(9)[0] == "main"
    ed.button("Step Back Into")  # the extension's: into the call just made, at its return
    assert ed.wait_line(3)[0] == "square"
    ed.button("Reverse")  # back to the breakpoint's hit
    assert ed.wait_line(2)[0] == "square"
    ed.shot("reversed")

    ed.command("neural-dap: Show Session Summary")
    ed.wait_text(".panel .view-lines", '"world": "recorded"')
    ed.button("Continue")  # to the end (stopAtEnd): the program's output is in the Debug Console
    ed.page.click('.panel .composite-bar .action-label[aria-label^="Debug Console"]')
    ed.wait_text(".repl", "total 14", timeout=30)
    ed.shot("output")
    ed.button("Continue")  # finish
    deadline = time.monotonic() + 20
    while adapter_processes() and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not adapter_processes(), "the adapter process outlived the session"
    assert ed.errors() == []


def test_the_language_server_shows_lenses_and_hints_in_a_real_vscode(editor):
    ed = editor
    ed.open("calc.py")
    ed.wait_text(".codelens-decoration", "Trace total([3, 1, 2])", timeout=60)
    hints = ed.wait_text(".view-lines", "s = 3 … 6 (3×)", timeout=60)
    assert "returns 6" in hints and "x = 3 … 2 (3×)" in hints
    ed.shot("language-server")
    assert ed.errors() == []
