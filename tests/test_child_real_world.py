"""The recording child runs the program as the program would run by itself: `python -m` launches,
the standard streams it sees, the processes it starts, values whose repr hangs, no orphans."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from neural_dap.trace import threaded
from neural_dap.trace.recorder import Limits, Program, record, record_skeleton

from .test_recorder import _python

VERSIONS = ["3.11", "3.12", "3.13"]


def _interpreter(version: str) -> str | None:
    if sys.version.startswith(version):
        return None  # this one
    found = _python(version)
    if found is None:
        pytest.skip(f"no Python {version} here")
    return found


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def _all_states(rec) -> list:
    return [rec.state(i) for i in range(len(rec))]


# -- 1. module launches ------------------------------------------------------------------------------


def test_a_module_launch_runs_as_python_dash_m_and_traces_the_working_folder(tmp_path):
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/__main__.py": """
                import sys
                from pkg import helper
                print(sys.argv[1:], sys.argv[0], sys.path[0], __name__, __package__, __spec__.name)
                print(helper.double(21))
            """,
            "pkg/helper.py": """
                def double(x):
                    y = x * 2
                    return y
            """,
        },
    )
    plain = subprocess.run(
        [sys.executable, "-m", "pkg", "a", "b"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout
    program = Program(path=str(tmp_path), module="pkg", argv=("a", "b"), cwd=str(tmp_path))
    full = record(program)
    assert full.outcome.kind == "finished", full.outcome
    assert full.stdout == plain
    main = str(tmp_path / "pkg" / "__main__.py")
    assert full.main_path == main
    assert set(full.sources) == {main, str(tmp_path / "pkg" / "helper.py")}
    assert ("double", 3) in [(s.function, s.line) for s in full.states]
    skeleton = record_skeleton(program)
    try:
        assert skeleton.outcome.kind == "finished"
        assert skeleton.main_path == main
        assert skeleton.stdout == plain
        assert [(s.function, s.line, s.locals) for s in _all_states(skeleton)] == [
            (s.function, s.line, s.locals) for s in full.states
        ]
    finally:
        skeleton.close()


def test_a_pytest_module_launch_traces_the_tests_not_pytest(tmp_path):
    _write(
        tmp_path,
        {
            "test_x.py": """
                from mine import square

                def test_square():
                    value = square(3)
                    assert value == 9
            """,
            "mine.py": """
                def square(n):
                    return n * n
            """,
        },
    )
    program = Program(
        path=str(tmp_path), module="pytest", argv=("-q", "-p", "no:cacheprovider", "test_x.py"), cwd=str(tmp_path)
    )
    skeleton = record_skeleton(program, Limits(wall_time=30))
    try:
        assert skeleton.outcome.kind == "exited" and skeleton.outcome.exit_code == 0, skeleton.outcome
        assert "1 passed" in skeleton.stdout
        assert skeleton.main_path.endswith(os.path.join("pytest", "__main__.py"))
        states = _all_states(skeleton)
        assert {s.path for s in states} == {str(tmp_path / "test_x.py"), str(tmp_path / "mine.py")}
        assert any(s.function == "test_square" and s.locals.get("value") == "9" for s in states)
    finally:
        skeleton.close()


def test_a_missing_module_is_an_error_as_python_dash_m_says_it(tmp_path):
    rec = record(Program(path=str(tmp_path), module="no_such_module_here", cwd=str(tmp_path)))
    assert rec.outcome.kind == "error"
    assert "No module named no_such_module_here" in rec.outcome.message


# -- 2. the standard streams ---------------------------------------------------------------------------

ENVIRONMENT_PROGRAMS = {
    "streams": """
        import io
        import sys

        print("tty", sys.stdout.isatty(), sys.stderr.isatty(), sys.stdin.isatty())
        print("encoding", sys.stdout.encoding, sys.stdout.errors, sys.stderr.encoding, sys.stderr.errors)
        print("fileno", sys.stdout.fileno(), sys.stderr.fileno(), sys.stdin.fileno(), sys.stdout.buffer.fileno())
        print("names", sys.stdout.name, sys.stderr.name, sys.stdin.name, sys.stdout.mode, sys.stdin.mode)
        print("kinds", sys.stdout is sys.__stdout__, isinstance(sys.stdout, io.TextIOWrapper))
        print("flags", sys.stdout.line_buffering, sys.stdout.writable(), sys.stdout.closed, sys.flags.utf8_mode)
        print("stdin", repr(sys.stdin.read()))
        sys.stdout.reconfigure(line_buffering=True)
        print("reconfigured", sys.stdout.line_buffering)
    """,
    "faulthandler": """
        import faulthandler
        import sys

        faulthandler.enable()
        print("enabled", faulthandler.is_enabled())
        faulthandler.enable(file=sys.stdout)
        print("on stdout", faulthandler.is_enabled())
    """,
    "logging": """
        import logging
        import sys

        logging.basicConfig(level=logging.INFO, format="%(levelname)s:%(name)s:%(message)s")
        for n in range(3):
            logging.info("step %d", n)
        logging.getLogger("other").warning("careful")
        print("to stderr", file=sys.stderr)
        print("to stdout")
    """,
    "buffer": """
        import sys

        print("text first")
        sys.stdout.flush()
        sys.stdout.buffer.write("bytes \\u00e9\\n".encode())
        sys.stdout.buffer.flush()
        sys.stdout.writelines(["a\\n", "b\\n"])
        sys.stderr.buffer.write(b"raw err\\n")
        print(sys.stdout.buffer.writable(), sys.stdout.buffer.fileno(), type(sys.stdout.buffer).__mro__[-3].__name__)
    """,
}


def _skeleton_output(rec) -> tuple[str, str]:
    outputs = rec.log.outputs
    stdout = "".join(t for _, s, t in outputs if s == "stdout") + rec.fd_stdout
    stderr = "".join(t for _, s, t in outputs if s == "stderr") + rec.fd_stderr
    return stdout, stderr


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", sorted(ENVIRONMENT_PROGRAMS))
def test_a_program_that_inspects_its_streams_sees_what_a_plain_run_sees(tmp_path, name, version):
    python = _interpreter(version)
    path = tmp_path / f"inspect_{name}.py"
    path.write_text(textwrap.dedent(ENVIRONMENT_PROGRAMS[name]))
    plain = subprocess.run(
        [python or sys.executable, str(path)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30
    )
    assert plain.returncode == 0, plain.stderr
    program = Program(str(path))
    full = record(program, python=python)
    assert full.outcome.kind == "finished", full.outcome
    assert (full.stdout, full.stderr) == (plain.stdout, plain.stderr)
    skeleton = record_skeleton(program, python=python, checkpoint_events=5)
    try:
        assert skeleton.outcome.kind == "finished", skeleton.outcome
        assert _skeleton_output(skeleton) == (plain.stdout, plain.stderr)
        states = _all_states(skeleton)  # every window replays without diverging
        assert [(s.line, s.locals) for s in states] == [(s.line, s.locals) for s in full.states]
    finally:
        skeleton.close()


# -- 4. values whose repr hangs or is slow; no orphans ----------------------------------------------------

HANGING = """
    class Hang:
        def __repr__(self):
            while True:
                pass

    class Slow:
        def __repr__(self):
            import time
            time.sleep(0.05)
            return "Slow()"

    hang = Hang()
    slow = Slow()
    total = 0
    for i in range(200):
        total += i
    print("done", total)
"""


def test_a_repr_that_never_returns_shows_a_marker_and_a_slow_one_is_paid_once(tmp_path):
    path = tmp_path / "hang.py"
    path.write_text(textwrap.dedent(HANGING))
    started = time.monotonic()
    full = record(Program(str(path)))
    assert full.outcome.kind == "finished", full.outcome
    assert full.states[-1].locals["hang"] == "<repr of Hang timed out after 0.1 s>"
    assert full.states[-1].locals["slow"] == "Slow()"
    assert full.stdout == "done 19900\n"
    skeleton = record_skeleton(Program(str(path)))
    try:
        states = _all_states(skeleton)  # each window pays each slow repr once, not at every event
        assert states[-1].locals["hang"] == "<repr of Hang timed out after 0.1 s>"
        assert [s.locals for s in states] == [s.locals for s in full.states]
    finally:
        skeleton.close()
    assert time.monotonic() - started < 10  # 400 events x 50 ms would be 20 s


def _recording_processes(root: int) -> dict[int, str]:
    """pid -> cmdline of the descendants of `root` that run the recording child."""
    psutil = pytest.importorskip("psutil")
    found = {}
    try:
        children = psutil.Process(root).children(recursive=True)
    except psutil.NoSuchProcess:
        return {}
    for child in children:
        try:
            cmdline = " ".join(child.cmdline())
        except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
            continue
        if "neural_dap.trace.child" in cmdline:
            found[child.pid] = cmdline
    return found


def _gone(pid: int) -> bool:
    psutil = pytest.importorskip("psutil")
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE  # dead, waiting for init to reap it
    except psutil.NoSuchProcess:
        return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
async def test_killing_the_adapter_leaves_no_recording_process_behind(tmp_path):
    from neural_dap.dapwire.client import adapter_command, spawn

    path = tmp_path / "forever.py"
    path.write_text(
        textwrap.dedent("""
            import os
            import time

            child = os.fork()
            if child == 0:
                while True:
                    time.sleep(0.05)
            n = 0
            while True:
                n += 1
                time.sleep(0.001)
        """)
    )
    async with spawn(adapter_command(), timeout=30) as client:
        process = client.process  # type: ignore[attr-defined]
        await client.call("initialize", {"adapterID": "neural-dap", "linesStartAt1": True, "columnsStartAt1": True})
        await client.send_request("launch", {"program": str(path), "stopOnEntry": True})
        await client.send_request("configurationDone")
        found: dict[int, str] = {}
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # the recording child, its checkpoint, the program's child
            found = _recording_processes(process.pid)
            if len(found) >= 3:
                break
            await anyio_sleep(0.2)
        assert len(found) >= 3, found
        os.kill(process.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and not all(_gone(pid) for pid in found):
            await anyio_sleep(0.1)
        left = {pid: cmd for pid, cmd in found.items() if not _gone(pid)}
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        assert not left, left


async def anyio_sleep(seconds: float) -> None:
    import anyio

    await anyio.sleep(seconds)


# -- 3. processes the program starts --------------------------------------------------------------------

PROCESS_PROGRAMS = {
    "fork": """
        import os

        def child_work():
            x = 41
            print("child", x + 1, flush=True)

        def main():
            pid = os.fork()
            if pid == 0:
                child_work()
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            after = os.waitstatus_to_exitcode(status)
            print("parent after", after)

        main()
        print("end")
    """,
    "mp_fork": """
        import multiprocessing as mp

        def child_work(n):
            total = n * 2
            print("child", total, flush=True)

        if __name__ == "__main__":
            p = mp.get_context("fork").Process(target=child_work, args=(21,))
            p.start()
            p.join()
            code = p.exitcode
            print("parent", code)
            print("end")
    """,
    "mp_spawn": """
        import multiprocessing as mp

        def child_work(n):
            total = n * 2
            print("child", total, flush=True)

        if __name__ == "__main__":
            p = mp.get_context("spawn").Process(target=child_work, args=(21,))
            p.start()
            p.join()
            code = p.exitcode
            print("parent", code)
            print("end")
    """,
    "pool": """
        import multiprocessing as mp

        def child_work(n):
            return n * n

        if __name__ == "__main__":
            with mp.get_context("fork").Pool(2) as pool:
                result = pool.map(child_work, range(5))
            print("result", result)
            print("end")
    """,
    "subprocess": """
        import subprocess
        import sys

        out = subprocess.run([sys.executable, "-c", "print('sub', 6 * 7)"], capture_output=True, text=True).stdout
        print("got", out.strip())
        subprocess.run([sys.executable, "-c", "import os; print('inherited', 'PYTHONHASHSEED' in os.environ)"])
        print("end")
    """,
}


@pytest.mark.parametrize("name", sorted(PROCESS_PROGRAMS))
def test_the_recording_stays_with_the_process_being_debugged(tmp_path, name):
    path = tmp_path / f"proc_{name}.py"
    path.write_text(textwrap.dedent(PROCESS_PROGRAMS[name]))
    plain = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=60)
    assert plain.returncode == 0, plain.stderr
    program = Program(str(path))
    full = record(program, Limits(wall_time=30))
    assert full.outcome.kind == "finished", full.outcome
    assert sorted(full.stdout.splitlines()) == sorted(plain.stdout.splitlines())
    assert "child_work" not in {s.function for s in full.states}
    assert full.states[-1].function == "<module>" and full.states[-1].source.strip() == 'print("end")'
    skeleton = record_skeleton(program, Limits(wall_time=30), checkpoint_events=3)
    try:
        assert skeleton.outcome.kind == "finished", skeleton.outcome
        assert sorted(skeleton.stdout.splitlines()) == sorted(plain.stdout.splitlines())
        if skeleton.log.switched_at is not None:  # a pool's threads: every thread in full from there
            states = list(threaded.join(skeleton)[0].states)
        else:
            states = _all_states(skeleton)  # every window replays (from the journal: no child twice)
        assert [(s.function, s.line) for s in states] == [(s.function, s.line) for s in full.states]
    finally:
        skeleton.close()


def test_an_exec_ends_the_recording_and_the_new_program_still_prints(tmp_path):
    path = tmp_path / "execs.py"
    path.write_text(
        textwrap.dedent("""
            import os
            import sys

            print("before", flush=True)
            os.execv(sys.executable, [sys.executable, "-c", "print('after exec')"])
        """)
    )
    for rec in (record(Program(str(path))), record_skeleton(Program(str(path)))):
        assert rec.outcome.kind == "exited" and "replaced itself" in rec.outcome.message, rec.outcome
        assert rec.stdout == "before\nafter exec\n"


# -- 5. output ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["3.12", "3.13"])
@pytest.mark.parametrize("engine", ["auto", "monitoring"])
def test_an_exception_thrown_into_a_library_generator_is_the_programs_own(tmp_path, version, engine):
    """sys.monitoring cannot DISABLE PY_THROW: returning it replaced the exception a contextmanager
    outside the user's code was handling with 'ValueError: Cannot disable PY_THROW events'."""
    python = _interpreter(version)
    _write(
        tmp_path,
        {
            "lib/helper.py": """
                import contextlib

                @contextlib.contextmanager
                def handled(log):
                    try:
                        yield
                    except KeyError as exc:
                        log.append(f"caught {exc!r}")

                def numbers():
                    while True:
                        yield 1
            """,
            "prog/main.py": """
                import sys

                sys.path.insert(0, sys.argv[1])
                import helper

                log = []
                for i in range(3):
                    with helper.handled(log):
                        raise KeyError(i)
                g = helper.numbers()
                next(g)
                del g  # closed: GeneratorExit thrown in
                print(log)
            """,
        },
    )
    path = tmp_path / "prog" / "main.py"
    plain = subprocess.run(
        [python or sys.executable, str(path), str(tmp_path / "lib")], capture_output=True, text=True, timeout=30
    )
    program = Program(str(path), argv=(str(tmp_path / "lib"),))
    full = record(program, python=python, engine=engine)
    assert (full.outcome.kind, full.stdout, full.stderr) == ("finished", plain.stdout, plain.stderr)
    skeleton = record_skeleton(program, python=python, engine=engine)
    try:
        assert skeleton.outcome.kind == "finished"
        assert _skeleton_output(skeleton) == (plain.stdout, plain.stderr)
    finally:
        skeleton.close()


def test_the_output_cut_notice_sits_where_the_output_was_cut(tmp_path):
    path = tmp_path / "loud.py"
    path.write_text("import sys\nfor i in range(50):\n    print(f'line {i:03d}')\n    print('err', file=sys.stderr)\n")
    limits = Limits(max_output=100)
    notice = "\n[neural-dap: output beyond 100 characters dropped]\n"
    full = record(Program(str(path)), limits)
    skeleton = record_skeleton(Program(str(path)), limits)
    try:
        for out, err in ((full.stdout, full.stderr), _skeleton_output(skeleton)):
            text = out + err
            assert text.count("neural-dap: output beyond") == 1
            kept = len(out.replace(notice, "")) + len(err.replace(notice, ""))
            assert kept == 100
        # in order of events: the notice comes after every kept piece of output
        outputs = [t for _, _, t in sorted(skeleton.log.outputs, key=lambda o: o[0])]
        assert outputs[-1] == notice
    finally:
        skeleton.close()
