"""A recording, not a re-run: the program runs once; replays read what it read and touch nothing.

Each program here changes or reads the world (a file appended to, an sqlite database, a local HTTP
server, child processes, its own state file, clocks and random bytes, a port, a lock). After a
debug session that travels back and forth (every replay a checkpoint makes) the world must be as
one plain run leaves it, and every view of a value must show the one run's value.
"""

from __future__ import annotations

import fcntl
import http.server
import platform
import socket
import sqlite3
import textwrap
import threading
import time
from pathlib import Path

import pytest

from neural_dap.trace import journal
from neural_dap.trace.execution import SkeletonExecution
from neural_dap.trace.recorder import Limits, Program, record_skeleton
from tests.dap_helpers import adapter, start, where

pytestmark = pytest.mark.skipif(journal.library() is None, reason="the journal library is built on Linux only")


def _record(path: Path, **limits) -> SkeletonExecution:
    return SkeletonExecution(record_skeleton(Program(str(path)), Limits(wall_time=30, max_events=50_000_000, **limits)))


def _every_state(execution: SkeletonExecution) -> list:
    return [execution.state(i) for i in range(len(execution))]


def _write(tmp_path: Path, name: str, source: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def test_a_log_appended_in_a_loop_gets_one_line_per_iteration(tmp_path):
    path = _write(
        tmp_path,
        "log_loop.py",
        """\
        import os
        here = os.path.dirname(os.path.abspath(__file__))
        total = 0
        for i in range(5):
            with open(os.path.join(here, "log.txt"), "a") as fh:
                fh.write(f"line {i}\\n")
            total += i
        print("done", total)
        """,
    )
    execution = _record(path)
    try:
        states = _every_state(execution)
        assert states[-1].locals["total"] == "10"
        assert execution.recording.diverged_at is None
    finally:
        execution.close()
    assert (tmp_path / "log.txt").read_text().count("\n") == 5


def test_sqlite_rows_are_inserted_once_and_the_count_is_the_runs(tmp_path):
    path = _write(
        tmp_path,
        "rows.py",
        """\
        import os, sqlite3
        here = os.path.dirname(os.path.abspath(__file__))
        db = sqlite3.connect(os.path.join(here, "shop.db"))
        db.execute("create table if not exists orders (id integer primary key, item text)")
        for item in ["apple", "pear", "fig", "kiwi"]:
            db.execute("insert into orders (item) values (?)", (item,))
            db.commit()
        count = db.execute("select count(*) from orders").fetchone()[0]
        db.close()
        """,
    )
    execution = _record(path)
    try:
        assert _every_state(execution)[-1].locals["count"] == "4"
    finally:
        execution.close()
    assert sqlite3.connect(tmp_path / "shop.db").execute("select count(*) from orders").fetchone()[0] == 4


def test_a_local_server_receives_each_request_once(tmp_path):
    received: list[bytes] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            received.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(200)
            self.end_headers()
            self.wfile.write(b"ok %d" % len(received))

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    path = _write(
        tmp_path,
        "orders.py",
        f"""\
        import urllib.request
        answers = []
        for i in range(3):
            url = "http://127.0.0.1:{server.server_port}/"
            request = urllib.request.Request(url, data=b"order %d" % i, method="POST")
            with urllib.request.urlopen(request) as response:
                answers.append(response.read().decode())
        """,
    )
    try:
        execution = _record(path)
        try:
            assert _every_state(execution)[-1].locals["answers"] == "['ok 1', 'ok 2', 'ok 3']"
        finally:
            execution.close()
    finally:
        server.shutdown()
    assert received == [b"order 0", b"order 1", b"order 2"]


def test_children_run_once_and_a_replay_is_told_their_exit_codes(tmp_path):
    marks = str(tmp_path / "marks.txt")
    path = _write(
        tmp_path,
        "children.py",
        f"""\
        import subprocess, sys
        codes = []
        for i in range(3):
            child = "import sys; open({marks!r}, 'a').write('m\\\\n'); sys.exit(%d)" % i
            done = subprocess.run([sys.executable, "-c", child])
            codes.append(done.returncode)
        """,
    )
    execution = _record(path)
    try:
        assert _every_state(execution)[-1].locals["codes"] == "[0, 1, 2]"
        assert execution.recording.diverged_at is None
    finally:
        execution.close()
    assert (tmp_path / "marks.txt").read_text() == "m\n" * 3


def test_clocks_and_random_bytes_replay_as_the_run_saw_them(tmp_path):
    path = _write(
        tmp_path,
        "random_things.py",
        """\
        import os, random, time, uuid
        tok = os.urandom(4).hex()
        u = str(uuid.uuid4())
        r = random.randint(0, 10**9)
        t = time.time()
        label = f"{tok}-{u[:8]}-{r}-{t}"
        print(label)
        """,
    )
    execution = _record(path)
    try:
        last = _every_state(execution)[-1]
        printed = execution.recording.stdout.strip()
        assert last.locals["label"] == repr(printed)
        again = execution.recording
        again.windows.clear()  # a second replay of the same events: the same values
        assert execution.state(len(execution) - 1).locals["label"] == repr(printed)
    finally:
        execution.close()


def test_a_package_with_empty_init_files_replays(tmp_path):
    (tmp_path / "shop" / "sub").mkdir(parents=True)
    (tmp_path / "shop" / "__init__.py").write_text("")
    (tmp_path / "shop" / "sub" / "__init__.py").write_text("")  # two equal code objects, two files
    (tmp_path / "shop" / "pricing.py").write_text("def price(n):\n    total = n * 3\n    return total\n")
    (tmp_path / "shop" / "sub" / "tax.py").write_text("def tax(x):\n    return x * 2\n")
    path = _write(
        tmp_path,
        "use_shop.py",
        "from shop import pricing\nfrom shop.sub import tax\ny = tax.tax(pricing.price(4))\ndone = True\n",
    )
    execution = _record(path)
    try:
        states = _every_state(execution)
        assert execution.recording.diverged_at is None
        assert {s.path for s in states if s.event == "call"} >= {
            str(tmp_path / "shop" / "__init__.py"),
            str(tmp_path / "shop" / "sub" / "__init__.py"),
        }
        assert states[-1].locals["y"] == "24"
    finally:
        execution.close()


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the raw system call's number is x86-64's")
def test_a_call_the_wrappers_miss_is_refused_in_a_replay_and_reported(tmp_path):
    """A raw system call (here through ctypes) goes around the journal: the recording makes it, a
    replay's seccomp net refuses it, and the replay reports where it stopped being one."""
    marks = tmp_path / "raw.txt"
    path = _write(
        tmp_path,
        "raw_syscall.py",
        f"""\
        import ctypes, os
        libc = ctypes.CDLL(None, use_errno=True)
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
        fd = libc.syscall(257, -100, {str(marks).encode()!r}, flags, 0o644)  # openat, around the wrappers
        os.write(fd, b"raw\\n")
        os.close(fd)
        done = fd > 0
        """,
    )
    execution = _record(path)
    try:
        with pytest.raises(Exception, match="openat"):
            _every_state(execution)
        assert execution.recording.diverged_at is not None
        assert "refused" in execution.recording.divergence
    finally:
        execution.close()
    assert marks.read_text() == "raw\n"  # once: the recording's


def _hold_then_let_go(tmp_path: Path, hold: str, let_go: str) -> Path:
    """A program that holds a resource across a few checkpoints (a loop of ~0.6 s), lets it go, and
    runs on for as long again (so checkpoints made while it held it stay alive)."""
    return _write(
        tmp_path,
        "holder.py",
        f"""\
        import fcntl, socket, time
        {hold}
        def spin(seconds):
            end = time.monotonic() + seconds
            n = 0
            while time.monotonic() < end:
                n += 1
            return n
        spin(0.6)
        {let_go}
        spin(0.6)
        """,
    )


def test_a_port_the_program_closed_can_be_bound_again_while_its_checkpoints_live(tmp_path):
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    path = _hold_then_let_go(
        tmp_path,
        f"server = socket.socket(); server.bind(('127.0.0.1', {port})); server.listen()",
        "server.close()",
    )
    execution = _record(path)
    try:
        assert len(execution.recording.checkpoints) > 2
        again = socket.socket()
        again.bind(("127.0.0.1", port))  # no checkpoint holds a copy of the listening socket
        again.close()
    finally:
        execution.close()


def test_a_peer_sees_end_of_file_when_the_program_closes(tmp_path):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    path = _hold_then_let_go(
        tmp_path,
        f"peer = socket.create_connection(('127.0.0.1', {listener.getsockname()[1]}))",
        "peer.close()",
    )
    execution = _record(path)
    try:
        connection, _ = listener.accept()
        connection.settimeout(5)
        assert connection.recv(10) == b""  # end-of-file, not a wait on a checkpoint's copy
        connection.close()
    finally:
        execution.close()
        listener.close()


def test_a_lock_the_program_released_is_free(tmp_path):
    lock_file = tmp_path / "the.lock"
    lock_file.write_text("")
    path = _hold_then_let_go(
        tmp_path,
        f"held = open({str(lock_file)!r}); fcntl.flock(held, fcntl.LOCK_EX)",
        "held.close()",
    )
    execution = _record(path)
    try:
        with open(lock_file) as fh:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)  # no checkpoint still holds it
    finally:
        execution.close()


def test_a_session_travels_a_program_that_changes_the_world_and_it_changed_once(tmp_path):
    """The issue's table through a real adapter: breakpoints, continues, reverse continue, step
    back, evaluate; afterwards the world is as one plain run leaves it."""
    log = tmp_path / "log.txt"
    counter = tmp_path / "counter.txt"
    path = _write(
        tmp_path,
        "world.py",
        f"""\
        import os
        n = int(open({str(counter)!r}).read()) if os.path.exists({str(counter)!r}) else 0
        open({str(counter)!r}, "w").write(str(n + 1))
        token = os.urandom(4).hex()
        for i in range(4):
            with open({str(log)!r}, "a") as fh:
                fh.write(f"{{token}} {{i}}\\n")
        done = True
        """,
    )

    async def session():
        async with adapter() as client:
            stopped = await start(client, {"program": str(path)}, {str(path): [{"line": 7}]})
            assert stopped["body"]["reason"] == "breakpoint"  # the first stop is the breakpoint
            _, _, first = await where(client)
            for command in ("continue", "continue", "reverseContinue", "stepBack", "continue"):
                await client.call(command, {"threadId": 1})
                await client.wait_event("stopped")
            _, _, seen = await where(client)
            frame = (await client.call("stackTrace", {"threadId": 1}))["stackFrames"][0]["id"]
            evaluated = await client.call("evaluate", {"expression": "token", "frameId": frame, "context": "repl"})
            # (a live program ends with its session, as under debugpy: run it to its end first)
            await client.call("setBreakpoints", {"source": {"path": str(path)}, "breakpoints": []})
            await client.call("continue", {"threadId": 1})
            ended = await client.wait_event({"stopped", "terminated"}, timeout=60)
            if ended["event"] == "stopped":  # (the end of the program is a stop first)
                await client.call("continue", {"threadId": 1})
                await client.wait_event("terminated", timeout=60)
            return first, seen, evaluated["result"]

    import anyio

    first, seen, evaluated = anyio.run(session)
    assert first["n"] == "0" and seen["n"] == "0"  # the value the run read, not a replay's
    assert evaluated == seen["token"] == first["token"]  # Variables and evaluate: one run's value
    lines = log.read_text().splitlines()
    assert counter.read_text() == "1"
    assert len(lines) == 4 and all(line.startswith(evaluated.strip("'")) for line in lines)


def test_a_long_program_that_sleeps_replays_without_sleeping(tmp_path):
    path = _write(
        tmp_path,
        "sleeper.py",
        """\
        import time
        total = 0
        for i in range(20):
            time.sleep(0.05)
            total += i
        """,
    )
    execution = _record(path)
    try:
        started = time.monotonic()
        assert _every_state(execution)[-1].locals["total"] == "190"
        assert time.monotonic() - started < 0.9  # the recording slept 1 s; a replay does not
    finally:
        execution.close()


def test_a_sandboxed_run_changes_nothing_but_its_own_temporary_files(tmp_path):
    """The language server's runs and `pytest --neural-dap`'s second run of a failing test: reads are
    real, changes to the world refused, temporary files allowed (they go to a scratch folder)."""
    outside = tmp_path / "outside.txt"
    path = _write(
        tmp_path,
        "sandboxed.py",
        f"""\
        import os, tempfile
        source = open(__file__).read()  # reading is allowed
        with tempfile.NamedTemporaryFile("w", delete=False) as scratch:
            scratch.write("scratch")  # its own temporary file: allowed
        kept = open(scratch.name).read()
        try:
            open({str(outside)!r}, "a").write("x")
            outcome = "written"
        except PermissionError:
            outcome = "refused"
        done = True
        """,
    )
    from neural_dap.trace.recorder import record

    rec = record(Program(str(path), sandbox=True), Limits(wall_time=30))
    last = rec.states[-1].locals
    assert (last["kept"], last["outcome"]) == ("'scratch'", "'refused'")
    assert not outside.exists()
    assert rec.refused is not None and rec.refused[0] >= 1 and "outside.txt" in rec.refused[1]


def test_the_program_ends_as_a_plain_run_ends_its_atexit_functions_run_and_open_files_get_their_data(tmp_path):
    """A user's atexit function writes a file and prints; a file left open gets its last lines at
    the interpreter's end. The recording child ends with os._exit: before, both were lost."""
    path = _write(
        tmp_path,
        "at_exit.py",
        """\
        import atexit, os
        here = os.path.dirname(os.path.abspath(__file__))
        log = open(os.path.join(here, "left_open.txt"), "w")
        log.write("the last line\\n")  # (buffered: written when the interpreter ends)


        def goodbye(items):
            with open(os.path.join(here, "at_exit.txt"), "w") as fh:
                fh.write(f"ran {len(items)}\\n")
            print("bye", len(items))


        atexit.register(goodbye, [1, 2, 3])
        print("main done")
        """,
    )
    execution = _record(path)
    try:
        states = _every_state(execution)  # (every replay: none runs the atexit function again)
        assert states[-1].line == 14
        assert execution.recording.stdout == "main done\nbye 3\n"
    finally:
        execution.close()
    assert (tmp_path / "at_exit.txt").read_text() == "ran 3\n"
    assert (tmp_path / "left_open.txt").read_text() == "the last line\n"


def test_a_sandboxed_programs_atexit_function_changes_nothing(tmp_path):
    """The program's end runs as the program's own code: in a sandbox, its effects are refused."""
    outside = tmp_path / "outside.txt"
    path = _write(
        tmp_path,
        "sandboxed_exit.py",
        f"""\
        import atexit
        atexit.register(lambda: open({str(outside)!r}, "w").write("x"))
        done = True
        """,
    )
    from neural_dap.trace.recorder import record

    rec = record(Program(str(path), sandbox=True), Limits(wall_time=30))
    assert rec.outcome.kind == "finished" and rec.states[-1].locals["done"] == "True"
    assert not outside.exists()
    assert rec.refused is not None and "outside.txt" in rec.refused[1]


def test_a_breakpoint_in_a_logging_handler_goes_on_and_its_lock_shows_held(tmp_path):
    """logging resets every handler's lock in a forked child (os.register_at_fork). A checkpoint
    taken inside `emit` (the lock held) replayed with the lock free: the handler's release raised,
    every continue answered "did not replay the same way", and the stop showed the lock free. The
    program's at-fork functions now run at its own forks only."""
    path = _write(
        tmp_path,
        "log_handler.py",
        """\
        import logging


        class ListHandler(logging.Handler):
            def emit(self, record):
                msg = record.getMessage()
                print("emitted", msg)


        log = logging.getLogger("t")
        log.addHandler(ListHandler())
        log.warning("one %s", 1)
        log.warning("two %s", 2)
        print("done")
        """,
    )

    async def session():
        async with adapter() as client:
            stops = [await start(client, {"program": str(path)}, {str(path): [{"line": 6}]})]
            frame = (await client.call("stackTrace", {"threadId": 1}))["stackFrames"][0]["id"]
            held = await client.call("evaluate", {"expression": "self.lock._is_owned()", "frameId": frame})
            places = [await where(client)]
            for _ in range(2):
                await client.call("continue", {"threadId": 1})
                stops.append(await client.wait_event("stopped"))
                places.append(await where(client))
            output = "".join(
                e["body"]["output"] for e in client.events_named("output") if e["body"].get("category") == "stdout"
            )
            return [s["body"]["reason"] for s in stops], places, held["result"], output

    import anyio

    reasons, places, held, output = anyio.run(session)
    assert reasons == ["breakpoint", "breakpoint", "end"]
    assert [(name, line) for name, line, _ in places] == [("emit", 6), ("emit", 6), ("<module>", 14)]
    assert '"two %s"' in places[1][2]["record"]
    assert held == "True"
    assert output == "emitted one 1\nemitted two 2\ndone\n"


def test_a_checkpoint_is_the_program_as_it_was_not_a_child_it_forked(tmp_path):
    """The program's own at-fork function (an RLock reset in a child, as logging does) does not
    run in the checkpoints a session travels through: every state replays as the run had it."""
    path = _write(
        tmp_path,
        "at_fork.py",
        """\
        import os
        import threading

        lock = threading.RLock()
        resets = []
        os.register_at_fork(after_in_child=lambda: (lock._at_fork_reinit(), resets.append(os.getpid())))


        def f(n):
            with lock:
                x = n * 2
                held = lock._is_owned()
                seen = list(resets)
            return x, held


        results = [f(k) for k in range(300)]
        if os.fork() == 0:  # the program's own fork: its function runs there, as in a plain run
            os._exit(0 if resets else 3)
        _, status = os.wait()
        print(len(results), all(held for _, held in results), os.waitstatus_to_exitcode(status))
        """,
    )
    recording = record_skeleton(Program(str(path)), Limits(wall_time=30, max_events=1_000_000), checkpoint_events=200)
    execution = SkeletonExecution(recording)
    try:
        assert len(recording.checkpoints) > 3
        states = _every_state(execution)
        assert recording.diverged_at is None
        held = [s.locals["held"] for s in states if s.function == "f" and "held" in s.locals]
        assert len(held) >= 300 and set(held) == {"True"}
        assert {s.locals["seen"] for s in states if s.function == "f" and "seen" in s.locals} == {"[]"}
        assert recording.stdout == "300 True 0\n"
    finally:
        execution.close()
