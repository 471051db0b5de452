"""The extension in a real VS Code: code-server 4.100.3 (VS Code 1.100.3) in headless Chromium, driven
by Playwright as a user would: install the built .vsix, open a workspace, debug, time-travel with VS
Code's buttons and the extension's own, a conditional breakpoint, the program's output, the session
summary, the language server's lenses and hints; no error notifications, no adapter left behind. Then
one scenario each: Break on Value Change and Reverse, a what-if from Set Value in the Variables view,
one failing pytest test (User Uncaught Exceptions), the confidence of a neural session's values, an
answer to input() typed in the integrated terminal, Cancel of a recording whose input() nobody answers, a
child process (`subProcess`) opened as a child session (the adapter's startDebugging) and debugged there.

`scripts/setup-e2e.sh` installs what it needs (CI runs it); without it the test skips. Screenshots go
to $NEURAL_DAP_ARTIFACTS/vscode-real/TEST when set (.ci/run sets .ci/artifacts), else to the test's
temporary folder.
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
# one failing test: `total` is 4 at the assertion
FAILING_TEST = textwrap.dedent(
    """\
    def add(a, b):
        return a + b


    def test_fails():
        total = add(2, 2)
        assert total == 5
    """
)
# the text of the terminal shown (the settings choose xterm's DOM renderer)
TERMINAL = ".terminal-wrapper.active .xterm-rows"
# asks in the terminal (console integratedTerminal); the breakpoint goes on the line after
GREET = textwrap.dedent(
    """\
    name = input("name? ")
    greeting = f"hello {name}"
    print(greeting)
    """
)
# subProcess: the parent runs child.py and prints what it printed; the breakpoint goes in the child's loop
PARENT = textwrap.dedent(
    """\
    import subprocess
    import sys

    result = subprocess.run([sys.executable, "child.py", "3"], capture_output=True, text=True)
    print("the child said:", result.stdout.strip())
    """
)
CHILD = textwrap.dedent(
    """\
    import sys

    n = int(sys.argv[1])
    total = 0
    for i in range(n):
        total += i * 10
    print("child total", total)
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

    def __init__(self, page, shots: Path, workspace: Path) -> None:
        self.page = page
        self.shots = shots
        self.workspace = workspace
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
        # Enter takes the first command listed: wait until it is this one (a slow machine lists
        # "similar commands" first for a moment)
        self.page.wait_for_selector(
            f'.quick-input-list .monaco-list-row[data-index="0"][aria-label^="{title}"]', timeout=20_000
        )
        time.sleep(0.3)
        self.page.keyboard.press("Enter")
        if then_type is not None:
            time.sleep(0.7)
            self.page.keyboard.type(then_type)
            self.page.keyboard.press("Enter")

    def start(self, configuration: str, started: str = ".debug-toolbar") -> None:
        """Debug: Select and Start Debugging, then a configuration of launch.json by its name; waits
        until `started` shows."""
        self.command("Debug: Select and Start Debugging")
        self.page.wait_for_selector(
            f'.quick-input-list .monaco-list-row[aria-label*="{configuration}"]', timeout=20_000
        )
        self.page.keyboard.type(configuration)
        time.sleep(0.5)
        self.page.keyboard.press("Enter")
        self.page.wait_for_selector(started, timeout=60_000)

    def go_to_line(self, line: int) -> None:
        self.page.click(".editor-group-container .monaco-editor .view-lines")
        self.page.keyboard.press("Control+g")
        self.page.keyboard.type(str(line))
        self.page.keyboard.press("Enter")

    def variable(self, name: str):
        """The row of a variable in the Variables view."""
        return self.page.locator(f'.debug-variables .monaco-list-row[aria-label^="{name}, value"]').first

    def menu(self, item: str) -> None:
        """Choose an item of the open context menu."""
        entry = self.page.locator(".context-view .action-item .action-label", has_text=re.compile(f"^{item}$"))
        entry.hover()
        time.sleep(0.3)  # VS Code's menu takes no click in its first moments (the right-click's own mouseup)
        entry.click()
        self.page.wait_for_selector(".context-view .monaco-menu", state="detached", timeout=10_000)

    def button(self, label: str) -> None:
        self.page.click(f'.debug-toolbar .action-label[aria-label^="{label}"]', timeout=20_000)

    def toolbar(self) -> list[str]:
        return self.page.eval_on_selector_all(
            ".debug-toolbar .action-label", "els => els.map(e => e.getAttribute('aria-label'))"
        )

    def top_frame(self, file: str = "prog.py") -> tuple[str, int] | None:
        rows = self.page.eval_on_selector_all(".debug-call-stack .stack-frame", "els => els.map(e => e.innerText)")
        if not rows:
            return None
        match = re.search(rf"^(.*?)\s*{re.escape(file)}\s*(\d+):\d+", rows[0].replace("\n", " "))
        return (match.group(1).strip(), int(match.group(2))) if match else None

    def wait_line(self, line: int, timeout: float = 30.0, file: str = "prog.py") -> tuple[str, int]:
        deadline = time.monotonic() + timeout
        frame = None
        while time.monotonic() < deadline:
            frame = self.top_frame(file)
            if frame is not None and frame[1] == line:
                return frame
            time.sleep(0.2)
        self.shot(f"not-at-line-{line}")
        raise AssertionError(f"expected to stop at line {line}, the call stack shows {frame}")

    def variables(self) -> str:
        return " ".join(
            self.page.eval_on_selector_all(".debug-variables .monaco-list-row", "els => els.map(e => e.innerText)")
        )

    def wait_variables(self, *patterns: str, timeout: float = 20.0) -> str:
        """The Variables view fills in after the stop: wait until it shows every one of `patterns`
        (in any order: locals are listed by name, as debugpy lists them)."""
        deadline = time.monotonic() + timeout
        seen = ""
        while time.monotonic() < deadline:
            seen = self.variables()
            if all(re.search(pattern, seen) for pattern in patterns):
                return seen
            time.sleep(0.2)
        self.shot("variables")
        raise AssertionError(f"the Variables view does not show {patterns!r}: {seen!r}")

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
def editor(tmp_path, request):
    chromium, sync_playwright = _tools()
    shots = Path(os.environ.get("NEURAL_DAP_ARTIFACTS", tmp_path)) / "vscode-real" / request.node.name
    shots.mkdir(parents=True, exist_ok=True)
    workspace = tmp_path / "workspace"
    (workspace / ".vscode").mkdir(parents=True)
    (workspace / "prog.py").write_text(SQUARES_PROGRAM)
    (workspace / "calc.py").write_text(CALC)
    (workspace / "test_x.py").write_text(FAILING_TEST)
    (workspace / "greet.py").write_text(GREET)
    (workspace / "parent.py").write_text(PARENT)
    (workspace / "child.py").write_text(CHILD)
    launch = {"type": "neural-python", "request": "launch"}
    configurations = [  # F5 starts the first; the others by name (Editor.start)
        {**launch, "name": "neural-dap: time travel", "program": "${workspaceFolder}/prog.py", "stopOnEntry": True},
        {
            **launch,
            "name": "neural-dap: pytest",
            "module": "pytest",
            "args": ["-q", "test_x.py::test_fails"],
            "cwd": "${workspaceFolder}",
        },
        {
            **launch,
            "name": "neural-dap: neural",
            "program": "${workspaceFolder}/prog.py",
            "world": "neural",
            "model": "embedded",
            "stopOnEntry": True,
        },
        {
            **launch,
            "name": "neural-dap: terminal",
            "program": "${workspaceFolder}/greet.py",
            "console": "integratedTerminal",
        },
        {
            **launch,
            "name": "neural-dap: child processes",
            "program": "${workspaceFolder}/parent.py",
            "cwd": "${workspaceFolder}",
            "subProcess": True,
        },
    ]
    (workspace / ".vscode" / "launch.json").write_text(
        json.dumps({"version": "0.2.0", "configurations": configurations})
    )
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
        # xterm's DOM renderer: the terminal's text is in the page, where the test can read it
        "terminal.integrated.gpuAcceleration": "off",
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
            ed = Editor(page, shots, workspace)
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
    assert _adapters_of(ed.workspace), "no adapter process of this session was found"
    ed.button("Continue")  # finish
    deadline = time.monotonic() + 20
    while _adapters_of(ed.workspace) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not _adapters_of(ed.workspace), "the adapter process outlived the session"
    assert ed.errors() == []


def test_the_language_server_shows_lenses_and_hints_in_a_real_vscode(editor):
    ed = editor
    ed.open("calc.py")
    ed.wait_text(".codelens-decoration", "Trace total([3, 1, 2])", timeout=60)
    hints = ed.wait_text(".view-lines", "s = 3 … 6 (3×)", timeout=60)
    assert "returns 6" in hints and "x = 3 … 2 (3×)" in hints
    ed.shot("language-server")
    assert ed.errors() == []


def _adapters_of(workspace: Path) -> list[str]:
    """This editor's adapter processes (the extension starts them in the workspace folder): the
    machine may run other sessions' adapters meanwhile."""
    ours = []
    for line in adapter_processes():
        try:
            if Path(os.readlink(f"/proc/{line.split()[0]}/cwd")) == workspace:
                ours.append(line)
        except OSError:
            continue  # ended meanwhile
    return ours


def _start_at_line(ed: Editor, line: int) -> None:
    """F5 (stopped on entry), a breakpoint on `line`, Continue to it."""
    ed.open("prog.py")
    ed.page.keyboard.press("F5")
    ed.wait_line(1)
    ed.go_to_line(line)
    ed.page.keyboard.press("F9")
    ed.button("Continue")
    ed.wait_line(line)


def _debug_console(ed: Editor) -> None:
    ed.page.click('.panel .composite-bar .action-label[aria-label^="Debug Console"]')


def test_break_on_value_change_then_reverse_in_a_real_vscode(editor):
    ed = editor
    _start_at_line(ed, 9)  # in the loop: i 0, total 0
    ed.wait_variables(r"total\s*[:=]?\s*0\b")
    ed.command("Remove All Breakpoints")
    ed.variable("total").click(button="right")
    ed.menu("Break on Value Change")
    ed.wait_text(".debug-breakpoints", "total in main")
    _debug_console(ed)
    ed.button("Continue")  # total += square(1): the first change (square(0) adds nothing)
    ed.wait_text(".part.sidebar", "total: 0 \u2192 1")
    ed.wait_variables(r"total\s*[:=]?\s*1\b", r"\bi\s*[:=]?\s*1\b")
    ed.shot("value-changed")
    ed.button("Continue")
    ed.wait_text(".part.sidebar", "total: 1 \u2192 5")
    ed.wait_variables(r"total\s*[:=]?\s*5\b", r"\bi\s*[:=]?\s*2\b")
    # back to the statement that made that change, before it ran (gdb's reverse watch)
    ed.button("Reverse")
    ed.wait_text(".part.sidebar", "total: 1 \u2192 5 by `total += square(i)` (main, line 9)")
    ed.wait_line(9)
    ed.wait_variables(r"total\s*[:=]?\s*1\b", r"\bi\s*[:=]?\s*2\b")
    console = ed.wait_text(".repl", "total: 1 \u2192 5")
    # (the Debug Console folds the second `total: 1 \u2192 5` into the first, with a count of 2)
    assert console.count("total: 0 \u2192 1") == 1, console
    ed.shot("reversed-to-the-change-before")
    assert ed.errors() == []


def test_what_if_from_the_variables_view_in_a_real_vscode(editor):
    ed = editor
    _start_at_line(ed, 10)  # print("total", total): total 14
    ed.wait_variables(r"total\s*[:=]?\s*14\b")
    ed.button("Step Back")
    ed.wait_line(8)
    ed.button("Step Back")
    ed.wait_line(9)  # before total += square(3)
    ed.wait_variables(r"total\s*[:=]?\s*5\b", r"\bi\s*[:=]?\s*3\b")
    ed.variable("total").click(button="right")
    ed.menu("Set Value")
    ed.page.wait_for_selector(".debug-variables .monaco-inputbox input", state="visible")
    ed.page.keyboard.press("Control+a")
    ed.page.keyboard.type("100")
    ed.page.keyboard.press("Enter")
    ed.wait_text(".part.sidebar", "branch 1: total = 5 \u2192 100")
    ed.wait_variables(r"total\s*[:=]?\s*100\b")
    ed.shot("what-if")
    _debug_console(ed)
    ed.button("Continue")  # the breakpoint on print, on the branch: 100 + 3 * 3
    ed.wait_line(10)
    ed.wait_variables(r"total\s*[:=]?\s*109\b")
    ed.button("Continue")  # to the end: the branch's output
    console = ed.wait_text(".repl", "total 109")
    assert "total 14" not in console, console
    ed.shot("what-if-output")
    assert ed.errors() == []


def test_debug_one_failing_pytest_test_in_a_real_vscode(editor):
    ed = editor
    ed.open("test_x.py")
    ed.start("neural-dap: pytest")
    # pytest catches the failure, so the run goes to its end; the exception filter for a failing
    # test is "User Uncaught Exceptions", which a user ticks once the debugger has listed its filters
    ed.wait_text(".part.sidebar", "exit code 1")
    ed.page.locator(".debug-breakpoints .monaco-list-row", has_text="User Uncaught Exceptions").locator(
        "input[type=checkbox]"
    ).check()
    ed.button("Restart")
    ed.wait_text(".part.sidebar", "assert 4 == 5", timeout=60)  # the stop's description, as debugpy's
    assert ed.wait_line(7, file="test_x.py")[0] == "test_fails"
    ed.wait_text(".editor-group-container", "Exception has occurred: AssertionError")
    ed.wait_variables(r"total\s*[:=]?\s*4\b")
    ed.shot("failing-test")
    assert ed.errors() == []


def test_a_neural_session_shows_the_confidence_of_each_value_in_a_real_vscode(editor):
    ed = editor
    ed.open("prog.py")
    ed.start("neural-dap: neural")
    ed.wait_line(1, timeout=60)
    ed.button("Step Over")
    ed.wait_line(6)
    ed.button("Step Over")
    ed.wait_line(14)
    ed.button("Step Into")
    assert ed.wait_line(7)[0] == "main"
    ed.button("Step Over")
    ed.wait_line(8)
    # each predicted value with the probability the model gave it
    ed.wait_variables(r"total\s*[:=]?\s*0\s+\(p=[01]\.\d\d\)")
    ed.wait_text(".statusbar", "neural: embedded")
    ed.shot("neural-confidence")
    assert ed.errors() == []


def _start_in_the_terminal(ed: Editor) -> None:
    """The terminal configuration, until greet.py asks its question in VS Code's terminal (runInTerminal:
    VS Code runs the relay there). The launch is open while the program is recorded, and VS Code counts
    the session as starting: whether its toolbar shows meanwhile is a race inside VS Code, so the start
    waits for the terminal instead."""
    ed.start("neural-dap: terminal", started=".terminal-wrapper.active")
    ed.wait_text(TERMINAL, "name? ", timeout=60)


def test_type_into_input_in_the_integrated_terminal_of_a_real_vscode(editor):
    ed = editor
    ed.open("greet.py")
    ed.go_to_line(2)
    ed.page.keyboard.press("F9")
    _start_in_the_terminal(ed)
    ed.shot("asked")
    ed.page.click(".terminal-wrapper.active .xterm-screen")  # the keyboard goes where the user clicks
    ed.page.keyboard.type("Ada Lovelace")
    ed.page.keyboard.press("Enter")
    # the recording ends with the program, then the session stops at the breakpoint with the answer
    ed.wait_line(2, timeout=60, file="greet.py")
    ed.wait_variables(r"name\s*[:=]?\s*'Ada Lovelace'")
    ed.shot("typed-answer")
    # the stop shows the Debug Console; the program's output went to the terminal as it ran
    ed.page.click('.panel .composite-bar .action-label[aria-label^="Terminal"]')
    ed.wait_text(TERMINAL, "hello Ada Lovelace")
    ed.button("Continue")  # to the end (stopAtEnd), and again to finish
    ed.wait_text(".part.sidebar", "exit code 0")
    ed.wait_variables(r"greeting\s*[:=]?\s*'hello Ada Lovelace'")
    ed.shot("end")
    ed.button("Continue")
    ed.page.wait_for_selector(".debug-toolbar", state="hidden", timeout=30_000)
    assert ed.errors() == []


def test_cancel_ends_the_recording_in_an_unanswered_input_in_a_real_vscode(editor):
    ed = editor
    ed.open("greet.py")
    _start_in_the_terminal(ed)
    # nobody answers; VS Code's Pause is disabled while the session starts, and the Cancel of the
    # launch's progress notification is how the user ends the recording there
    toast = ed.page.locator(".notification-toast", has_text="Starting the recorded world model")
    toast.locator(".monaco-button", has_text="Cancel").click(timeout=20_000)
    ed.wait_text(".part.sidebar", "paused")
    assert ed.wait_line(1, file="greet.py")[0] == "<module>"
    ed.shot("cancelled")
    assert ed.errors() == []


def _call_stack(ed: Editor) -> list[str]:
    """The Call Stack view's rows as VS Code labels them: `Session NAME STATE`, `Stack Frame FUNCTION, line
    N, FILE` (its text is cut to the view's width)."""
    return ed.page.eval_on_selector_all(
        ".debug-call-stack .monaco-list-row", "els => els.map(e => e.getAttribute('aria-label') || '')"
    )


def _wait_session(ed: Editor, name: str, state: str, line: int | None = None, timeout: float = 60.0) -> str:
    """Waits until the session whose name starts with `name` shows `state` (and, when it is expanded, its
    top frame at `line`); returns its row's label."""
    deadline = time.monotonic() + timeout
    rows: list[str] = []
    while time.monotonic() < deadline:
        rows = _call_stack(ed)
        for at, row in enumerate(rows):
            if row.startswith(f"Session {name}") and state in row:
                frames = []
                for below in rows[at + 1 :]:
                    if below.startswith("Session "):
                        break
                    frames.append(below)
                top = next((f for f in frames if f.startswith("Stack Frame ")), "")
                if line is None or f", line {line}, " in top:
                    return row
        time.sleep(0.2)
    ed.shot("session")
    raise AssertionError(f"no session {name!r} showing {state!r} at line {line}: {rows}")


def _wait_console(ed: Editor, wanted: str, unwanted: str, timeout: float = 30.0) -> str:
    """The Debug Console shows the focused session's output: wait until it has `wanted` and not `unwanted`."""
    deadline = time.monotonic() + timeout
    seen = ""
    while time.monotonic() < deadline:
        seen = ed.text(".repl").replace("\xa0", " ")
        if wanted in seen and unwanted not in seen:
            return seen
        time.sleep(0.3)
    raise AssertionError(f"the Debug Console shows {seen!r}, not {wanted!r} alone")


def test_a_child_process_opens_as_a_child_session_in_a_real_vscode(editor):
    ed = editor
    ed.open("child.py")
    ed.go_to_line(6)  # total += i * 10
    ed.page.keyboard.press("F9")
    ed.open("parent.py")
    ed.start("neural-dap: child processes")
    # the parent ran to its end; the adapter asked VS Code (startDebugging) to open the child: a
    # session of its own, nested under the parent's, stopped at the breakpoint. The parent's stop
    # yields the focus (preserveFocusHint), so the child's takes it, as under debugpy, where the
    # parent would still be running
    _wait_session(ed, "neural-dap: child processes", "End of the program (exit code 0)", line=5)
    child = _wait_session(ed, "child.py (pid ", "Paused on breakpoint", line=6)
    assert re.match(r"Session child\.py \(pid \d+\) Paused on breakpoint", child), child
    ed.shot("child-session-listed")
    ed.page.wait_for_selector('.tab.active[aria-label^="child.py"]', timeout=20_000)
    ed.wait_variables(r"\bn\s*[:=]?\s*3\b", r"total\s*[:=]?\s*0\b", r"\bi\s*[:=]?\s*0\b")
    # the parent printed what the child printed, as in a plain run: its Debug Console says so once
    # (the parent read it: it is not shown twice)
    ed.page.locator('.debug-call-stack .monaco-list-row[aria-label^="Session neural-dap: child processes"]').click()
    _debug_console(ed)
    console = _wait_console(ed, "the child said: child total 30", "Traceback")
    assert console.count("child total 30") == 1, console
    ed.page.locator('.debug-call-stack .monaco-list-row[aria-label^="Session child.py (pid "]').click()
    _wait_session(ed, "child.py (pid ", "Paused on breakpoint", line=6)
    ed.page.wait_for_selector('.tab.active[aria-label^="child.py"]', timeout=20_000)
    ed.shot("child-at-its-breakpoint")
    # both adapters run in the workspace folder (a child session has no folder of its own)
    assert len(_adapters_of(ed.workspace)) == 2, adapter_processes()

    ed.button("Step Over")
    _wait_session(ed, "child.py (pid ", "Paused on step", line=5)
    ed.button("Step Over")  # onto the breakpoint's line: VS Code says "on breakpoint"
    _wait_session(ed, "child.py (pid ", "Paused on ", line=6)
    ed.wait_variables(r"total\s*[:=]?\s*0\b", r"\bi\s*[:=]?\s*1\b")
    ed.button("Continue")
    _wait_session(ed, "child.py (pid ", "Paused on breakpoint", line=6)
    ed.wait_variables(r"total\s*[:=]?\s*10\b", r"\bi\s*[:=]?\s*2\b")
    ed.button("Step Back")
    _wait_session(ed, "child.py (pid ", "Paused on step", line=5)
    ed.wait_variables(r"total\s*[:=]?\s*10\b", r"\bi\s*[:=]?\s*1\b")
    ed.shot("child-stepped-back")
    ed.command("Remove All Breakpoints")
    ed.button("Continue")  # to the child's end (stopAtEnd, the parent's): its own output in its console
    _wait_session(ed, "child.py (pid ", "End of the program (exit code 0)", line=7)
    ed.wait_variables(r"total\s*[:=]?\s*30\b")
    _wait_console(ed, "child total 30", "the child said")
    ed.shot("child-at-its-end")
    ed.button("Continue")  # the child session ends; the parent's is still there, at its end
    deadline = time.monotonic() + 30
    while any(row.startswith("Session child.py") for row in _call_stack(ed)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(row.startswith("Session child.py") for row in _call_stack(ed)), _call_stack(ed)
    ed.wait_text(".debug-call-stack", "parent.py")
    ed.button("Continue")
    ed.page.wait_for_selector(".debug-toolbar", state="hidden", timeout=30_000)
    deadline = time.monotonic() + 20
    while _adapters_of(ed.workspace) and time.monotonic() < deadline:
        time.sleep(0.3)
    assert not _adapters_of(ed.workspace), "an adapter process outlived its session"
    assert ed.errors() == []
