"""`pytest --neural-dap`: after the run, open a time-travel session at each failing test.

Each failing test is run again alone under the recorder (`neural-dap debug -m pytest NODEID`),
in the sandbox (the test ran once already: whatever it changes in the world, a database, a file, a
server, is not changed a second time; the session says what was refused), stopping where the
failure leaves the test's code (the `userUnhandled` exception stop: pytest catches
the exception, so it is not "uncaught"); from there step back to see how the values came to be.
In a terminal the session is interactive; elsewhere (CI, a pipe) the commands are printed, or
`--neural-dap-do "where; p x; back"` runs a script of commands at each failure.

The plugin is inert unless `--neural-dap` is given.
"""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

MAX_SESSIONS = 5  # failures debugged in one run; the rest are listed


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("neural-dap")
    group.addoption(
        "--neural-dap",
        action="store_true",
        default=False,
        help="after the run, debug each failing test in a time-travel session (neural-dap)",
    )
    group.addoption(
        "--neural-dap-do",
        default=None,
        help='commands to run at each failure instead of an interactive session, e.g. "where; p x; back"',
    )


class FailureCollector:
    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.failed: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.failed and report.when == "call" and report.nodeid not in self.failed:
            self.failed.append(report.nodeid)

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if not self.failed:
            return
        script = self.config.getoption("neural_dap_do")
        interactive = script is None and sys.stdin.isatty() and sys.stdout.isatty()
        terminalreporter.section("neural-dap: time travel at each failure")
        for k, nodeid in enumerate(self.failed):
            command = debug_command(nodeid, script)
            if k >= MAX_SESSIONS or not (interactive or script is not None):
                terminalreporter.write_line(shlex.join(command))
                continue
            terminalreporter.write_line(f"--- {nodeid} ---")
            sys.stdout.flush()  # the session writes to the same terminal
            done = subprocess.run(command, cwd=str(self.config.invocation_params.dir), check=False)
            if done.returncode not in (0, 1):
                terminalreporter.write_line(f"neural-dap debug ended with exit code {done.returncode}")


def debug_command(nodeid: str, script: str | None) -> list[str]:
    """The terminal front end on one test, run to where its failure leaves the test's code."""
    command = [
        sys.executable,
        "-m",
        "neural_dap",
        "debug",
        "--run",
        "--batch",
        "--sandbox",
        "--break-on",
        "userUnhandled",
    ]
    if script is not None:
        command += ["--do", script]
    return [*command, "-m", "pytest", "-q", "-p", "no:cacheprovider", nodeid]


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("neural_dap", default=False):
        config.pluginmanager.register(FailureCollector(config), "neural-dap-failures")
