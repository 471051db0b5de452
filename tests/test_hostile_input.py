"""Hostile input: what arrives from a socket, a model or a recorded repr never runs, never allocates
what it names, and never stalls the session. Each test here failed on 5a177f8."""

from __future__ import annotations

import array
import json
import os
import socket
import stat
import sys
import time
import tracemalloc

import anyio
import pytest

from neural_dap.core.calls import call_text
from neural_dap.core.evaluator import EvaluationError, evaluate
from neural_dap.core.reprs import ObjectRepr, parse_repr, show
from neural_dap.core.source import SourceInfo
from neural_dap.dapwire.client import DapClient, connected
from neural_dap.dapwire.framing import encode_frame
from neural_dap.format.trace import FormatError, TraceText
from neural_dap.trace.recorder import Limits, Program, record

from .dap_helpers import adapter, start, where


def _payload_program(tmp_path) -> tuple[str, str]:
    program = tmp_path / "victim.py"
    program.write_text("def f(x):\n    return x\n")
    marker = tmp_path / "pwned"
    return str(program), str(marker)


def _attack_frames(program: str, marker: str) -> bytes:
    initialize = {"seq": 1, "type": "request", "command": "initialize", "arguments": {"adapterID": "x"}}
    launch = {
        "seq": 2,
        "type": "request",
        "command": "launch",
        "arguments": {
            "program": program,
            "entry": {"function": "f", "args": f"__import__('pathlib').Path({marker!r}).write_text('x')"},
            "stopOnEntry": True,
        },
    }
    configured = {"seq": 3, "type": "request", "command": "configurationDone"}
    return b"".join(encode_frame(json.dumps(m).encode()) for m in (initialize, launch, configured))


async def _tcp_adapter():
    process = await anyio.open_process([sys.executable, "-m", "neural_dap", "adapter", "--port", "0"])
    assert process.stdout is not None
    line = b""
    with anyio.fail_after(30):
        while not line.endswith(b"\n"):
            line += await process.stdout.receive(1)
    port = int(line.decode().rsplit(":", 1)[-1])
    return process, port


def _read_until_closed(port: int, data: bytes, seconds: float = 10.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=seconds) as sock:
        sock.sendall(data)
        received = b""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                return received
            received += chunk
        raise AssertionError(f"the connection stayed open; received {received[:200]!r}")


async def test_a_web_page_posting_to_the_tcp_adapter_runs_nothing_and_gets_no_dap(tmp_path):
    program, marker = _payload_program(tmp_path)
    body = _attack_frames(program, marker)
    http = (
        b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: http://evil.example\r\nContent-Type: text/plain\r\n"
        b"Content-Length: %d\r\n\r\n" % len(body)
    ) + body
    process, port = await _tcp_adapter()
    try:
        received = await anyio.to_thread.run_sync(_read_until_closed, port, http)
        assert received == b""  # closed at once, without a word of DAP
        await anyio.sleep(2)
        assert not os.path.exists(marker)
        # the adapter still serves real clients afterwards
        received = await anyio.to_thread.run_sync(_read_until_closed, port, b"GET / HTTP/1.1\r\n\r\n")
        assert received == b""
    finally:
        process.terminate()
        await process.wait()


async def test_nothing_is_served_before_initialize(tmp_path):
    program, _marker = _payload_program(tmp_path)
    async with adapter() as c:
        refused = await c.request("launch", {"program": program, "entry": {"function": "f", "args": "1"}})
        assert not refused["success"] and "initialize" in refused["message"]
        threads = await c.request("threads")
        assert not threads["success"]
        await c.call("initialize", {"adapterID": "neural-dap"})
        assert (await c.call("threads"))["threads"]


async def test_the_unix_socket_is_private_to_its_owner_and_speaks_dap(tmp_path):
    path = str(tmp_path / "dap.sock")
    process = await anyio.open_process([sys.executable, "-m", "neural_dap", "adapter", "--socket", path])
    try:
        assert process.stdout is not None
        with anyio.fail_after(30):
            line = b""
            while not line.endswith(b"\n"):
                line += await process.stdout.receive(1)
        mode = os.stat(path).st_mode
        assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
        program = tmp_path / "p.py"
        program.write_text("x = 1\ny = x + 1\n")
        stream = await anyio.connect_unix(path)
        async with connected(stream, stream, timeout=60) as client:
            stopped = await start(client, {"program": str(program), "stopOnEntry": True})
            assert stopped["body"]["reason"] == "entry" and (await where(client))[1] == 1
    finally:
        process.terminate()
        await process.wait()
    assert not os.path.exists(path)


def test_predicted_input_text_is_rebuilt_from_values_and_never_runs_as_code(tmp_path):
    code = "def f(a, b):\n    return a\n"
    predicted = {"a": "1 #", "b": "'''\n, print('executed')) #'''"}
    text = call_text(code, predicted)
    assert text == "1, \"\\n, print('executed')) #\""
    rec = record(
        Program(str(tmp_path / "f.py"), source=code, entry="f", entry_args=text, literal_args=True), Limits(wall_time=5)
    )
    assert rec.outcome.kind == "finished" and "executed" not in rec.stdout and rec.return_value == "1"
    # and text that is not a literal is refused by the child, never evaluated
    rec = record(
        Program(str(tmp_path / "f.py"), source=code, entry="f", entry_args="print('executed'), 2", literal_args=True),
        Limits(wall_time=5),
    )
    assert (
        rec.outcome.kind == "error" and "not a Python literal" in rec.outcome.message and "executed" not in rec.stdout
    )


HEAVY = [
    "[[0]*100000]*100000",
    "sum([[0]*2000]*2000, [])",
    "round(1, -10**9)",
    "'%0999999999d' % 1",
    "'%*d' % (10**9, 1)",
    "'x'.center(10**9)",
    "'ab'.replace('', 'x' * 1000) * 2",
    "'-'.join(['a' * 1000] * 1000)",
    "('\\t' * 1000).expandtabs(10**6)",
    "[[0] * 1000 for i in range(100000)]",
    "'-' * 50000 + '1'",
    "+".join(["1"] * 20000),
    "b'a'.decode('x')",
    "'9' * 10000",
    "int('9' * 100000)",
    "-" * 50000 + "1",
]


@pytest.mark.parametrize("expression", HEAVY)
def test_heavy_expressions_fail_or_stay_small_quickly(expression):
    tracemalloc.start()
    started = time.monotonic()
    try:
        value = evaluate(expression, {"xs": "[1, 2, 3]"})
        text = show(value)
        assert len(text) <= 100_001
    except EvaluationError:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    assert time.monotonic() - started < 2.0
    assert peak < 64 * 1024 * 1024


def test_a_repr_never_allocates_what_it_names():
    tracemalloc.start()
    value = parse_repr("bytearray(200000000)")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert isinstance(value, ObjectRepr) and peak < 1024 * 1024
    assert parse_repr("bytearray(b'ab')") == bytearray(b"ab")
    assert parse_repr("set([1, 2])") == {1, 2}


def test_deeply_nested_json_from_a_model_is_a_format_error():
    trace = TraceText("nd", SourceInfo("def f(x):\n    return x\n"), 1)
    from neural_dap.core.state import State

    trace.append(State("call", 1, "def f(x):", "f", 0, 0, {"x": "1"}))
    deep = '<|line_sep|>{"x": ' + "[" * 100_000 + "<|action_sep|>    return x\n"
    with pytest.raises(FormatError):
        trace.parse(deep)
    value = "<|return_sep|><|action_sep|>    return x\n<|arg_sep|>" + "[" * 100_000
    with pytest.raises(FormatError):
        trace.parse(value)


async def test_a_condition_that_raises_gives_one_answer_and_no_stop(tmp_path):
    """As debugpy 1.8 does: the error is shown at each hit and the program runs on."""
    program = tmp_path / "p.py"
    program.write_text("total = 0\nfor i in range(3):\n    total += i\nprint(total)\n")
    async with adapter() as c:
        await start(
            c,
            {"program": str(program), "stopOnEntry": True},
            breakpoints={str(program): [{"line": 3, "condition": "b'a'.decode('x')"}]},
        )
        seq = await c.send_request("continue", {"threadId": 1})
        response = await c.response(seq, "continue")
        assert response["success"]
        stopped = await c.wait_event("stopped")
        assert stopped["body"]["reason"] == "end"
        told = [e for e in c.events_named("output") if "condition" in e["body"]["output"]]
        assert len(told) == 3 and "LookupError" in told[0]["body"]["output"]
        await anyio.sleep(0.5)
        assert list(c.responses_to(seq)) == [response]  # answered once
        assert (await where(c))[1] == 4


async def test_a_heavy_watch_neither_freezes_the_session_nor_blows_it_up(tmp_path):
    program = tmp_path / "p.py"
    program.write_text("xs = [1, 2, 3]\nprint(xs)\n")
    async with adapter() as c:
        await start(c, {"program": str(program), "stopOnEntry": True})
        frame = (await c.call("stackTrace", {"threadId": 1}))["stackFrames"][0]["id"]
        await c.call("next", {"threadId": 1})
        await c.wait_event("stopped")
        heavy = await c.send_request(
            "evaluate", {"expression": "[[0]*100000]*100000", "frameId": frame, "context": "watch"}
        )
        started = time.monotonic()
        assert (await c.call("threads"))["threads"]  # served while the watch is evaluated
        answer = await c.response(heavy, "evaluate")
        assert time.monotonic() - started < 10
        assert not answer["success"] or len(answer["body"]["result"]) <= 100_001
        bad = await c.request("evaluate", {"expression": "b'a'.decode('x')", "frameId": frame, "context": "repl"})
        assert not bad["success"] and "LookupError" in bad["message"]


async def test_an_oversized_content_length_is_refused_at_once():
    async with adapter("tcp") as c:
        await c.call("initialize", {"adapterID": "neural-dap"})
        await c.writer.stream.send(b"Content-Length: 99999999999\r\n\r\n")
        told = await c.wait_event("output", where=lambda e: "closing the connection" in e["body"]["output"])
        assert "over the" in told["body"]["output"]


async def test_launch_limits_are_capped(tmp_path):
    program = tmp_path / "p.py"
    program.write_text("x = 1\n")
    async with adapter() as c:
        await c.call("initialize", {"adapterID": "neural-dap"})
        refused = await c.request("launch", {"program": str(program), "limits": {"maxEvents": 10**12}})
        assert not refused["success"] and "maxEvents" in refused["message"]


def test_a_debuggee_may_start_only_a_few_processes(tmp_path):
    program = tmp_path / "forks.py"
    program.write_text(
        "import subprocess, sys\n"
        "started = 0\n"
        "for _ in range(30):\n"
        "    try:\n"
        "        subprocess.run([sys.executable, '-c', 'pass'])\n"
        "        started += 1\n"
        "    except OSError:\n"
        "        pass\n"
        "print('started', started)\n"
    )
    rec = record(Program(str(program)), Limits(wall_time=60, max_events=100_000, max_processes=5))
    assert rec.outcome.kind == "finished" and "started 5" in rec.stdout


async def test_run_without_debugging_runs_the_program_plainly(tmp_path):
    program = tmp_path / "p.py"
    program.write_text("import sys\nprint('hello', sys.argv[1:])\nsys.exit(3)\n")
    async with adapter() as c:
        await c.call("initialize", {"adapterID": "neural-dap"})
        launch = await c.send_request("launch", {"program": str(program), "noDebug": True, "args": ["a"]})
        await c.call("configurationDone")
        assert (await c.response(launch, "launch"))["success"]
        exited = await c.wait_event("exited")
        await c.wait_event("terminated")
        assert exited["body"]["exitCode"] == 3
        out = "".join(e["body"]["output"] for e in c.events_named("output") if e["body"].get("category") == "stdout")
        assert "hello ['a']" in out
        assert not c.events_named("stopped")


async def test_the_client_helper_sees_responses(tmp_path):
    # a sanity check of the helper the tests above rely on
    async with adapter() as c:
        seq = await c.send_request("initialize", {"adapterID": "neural-dap"})
        await c.response(seq, "initialize")
        assert len(c.responses_to(seq)) == 1
        assert isinstance(c, DapClient)


def test_an_exception_text_that_is_huge_or_deeply_nested_is_shown_as_recorded():
    """A recorded exception's repr is parsed (never evaluated) for its message: text past the
    repr limit or nested past the parser's depth is shown as it was recorded; code in it is text."""
    from neural_dap.dap.inspection import _message

    deep = "(" * 50_000 + ")" * 50_000
    assert _message(f"({deep})", "ValueError") == deep
    huge = "'" + "x" * 10_000_000 + "'"
    assert _message(f"({huge})", "ValueError") == huge
    assert _message("(__import__('os').system('echo pwned'))", "ValueError") == "__import__('os').system('echo pwned')"


def test_a_record_notice_naming_more_than_the_files_hold_is_refused(tmp_path):
    """The recording child tells the adapter how many records it wrote into the files; a notice
    (a corrupt or hostile pipe) naming 350 million records that are not there marks the log
    corrupt: nothing is counted and no column is grown for them."""
    from neural_dap.trace.skeleton import SkeletonLog

    log = SkeletonLog(str(tmp_path), capacity=16)
    notice = (0).to_bytes(8, "little") + (12 * 350_000_000).to_bytes(4, "little") + (0).to_bytes(4, "little")
    log.feed_frames(b"r" + len(notice).to_bytes(4, "little") + notice)
    assert log.corrupt and log.count == 0 and log.columns.capacity == 16


@pytest.mark.parametrize("indexer", ["c", "numpy"])
def test_records_and_events_that_name_what_no_child_makes_never_index_outside_the_recording(
    tmp_path, monkeypatch, indexer
):
    """A corrupt or hostile child's records: a call whose caller and resumed run lie in the future
    or nowhere, an end of an invocation never called (at line 0); a code numbered -1; a thread
    stream that starts one invocation twice and then passes the threaded budget. The log is
    marked corrupt, its tree ends before the first record that lies and names no caller or resumed
    run that is not an earlier invocation, and folding the stream keeps only what is alive. The
    same whether the records are indexed by the C pass or by numpy's."""
    import msgspec
    import numpy as np

    from neural_dap.trace import skeleton as skeleton_module
    from neural_dap.trace.rolling import RollingEvents

    if indexer == "numpy":
        monkeypatch.setattr(skeleton_module, "_records_index", None)
    elif skeleton_module._records_index is None:
        pytest.skip("the C pass (neural_dap/trace/_records) is not built here")
    from neural_dap.trace.skeleton import CALL, CALL_DTYPE, EVENT_DTYPE, RETURN, SkeletonLog, SkeletonRecording

    events = np.array([(0, 1, CALL, b""), (0, 2, 1, b""), (1, 3, CALL, b""), (7, 0, RETURN, b"")], dtype=EVENT_DTYPE)
    calls = np.array([(0, -1, -1), (1, 99, 5)], dtype=CALL_DTYPE)  # caller_last and resumes beyond the run
    log = SkeletonLog(str(tmp_path), capacity=16)
    (tmp_path / "events.bin").write_bytes(events.tobytes())
    (tmp_path / "calls.bin").write_bytes(calls.tobytes())
    notice = (0).to_bytes(8, "little") + (events.nbytes).to_bytes(4, "little") + (calls.nbytes).to_bytes(4, "little")
    log.feed_frames(b"r" + len(notice).to_bytes(4, "little") + notice)
    batch = msgspec.msgpack.encode([["k", 0, "f", "/p.py", 1], ["k", 1, "g", "/p.py", 5]])
    log.feed_frames(b"m" + len(batch).to_bytes(4, "little") + batch)
    assert log.corrupt  # (the end of invocation 7, never called)
    tree = SkeletonRecording(log, "/p.py", 0.0, "", "").tree
    assert len(tree) == 3  # the recording ends before it
    assert tree.parent.tolist() == [-1, -1] and tree.resumes.tolist() == [-1, -1] and tree.stack(2) == [2]

    (tmp_path / "again").mkdir()
    log = SkeletonLog(str(tmp_path / "again"), capacity=16)
    bad = msgspec.msgpack.encode([["k", -1, "h", "/p.py", 9]])
    log.feed_frames(b"m" + len(bad).to_bytes(4, "little") + bad)
    assert log.corrupt and not log.codes

    rolling = RollingEvents(budget=2)  # (one event folded at each append past two)
    twice = [["c", 5, 0, 1, 0, ["x", 1]], ["c", 5, 0, 1, 0, ["x", 2]], ["r", 5, 1, "None"], ["c", 6, 0, 1, 0, []]]
    for event in [*twice, ["l", 6, 2, ["y", 3], None], ["l", 6, 3, None, None]]:
        rolling.append(event)
    assert rolling.dropped == 4 and [e for e in rolling.base if e[0] == "s"] == [["s", 6, 0, 1, 0, []]]


def test_a_threaded_stops_globals_and_journal_length_a_child_sends_malformed_are_dropped(tmp_path):
    """Every thread as skeletons, a live stop: the user's modules' globals ride on the stop's message
    and the journal's length the replays read to on ["journaled", bytes] (child/frontier.py).
    Globals that do not decode (a structured value of the wrong shape, a name that is not text, an
    odd list) are dropped as they arrive, module by module, never decoded at every stop again; a
    length past 2^62 is refused (ctypes would have cut a longer one to another number)."""
    import msgspec

    from neural_dap.trace.skeleton import SkeletonLog

    log = SkeletonLog(str(tmp_path), capacity=16)
    fine = ["n", "3", "rows", ["[1]", "list", [["0", "1"]], 0]]
    stop = [
        "stopped", 5, "breakpoint", 1, "/held.sock", [0, 1], None,
        {"/ok.py": fine, "/bad.py": ["x", [1]], "/worse.py": ["y", ["a", "b", 5, 0]], "/odd.py": ["z"], 7: fine,
         "/names.py": [3, "4"]},
    ]  # fmt: skip
    batch = [["switch", 0, "skeletons"], ["journaled", 1 << 63], ["journaled", -1], stop]
    encoded = msgspec.msgpack.encode(batch)
    log.feed_frames(b"m" + len(encoded).to_bytes(4, "little") + encoded)
    assert not log.corrupt and log.journal_bytes is None
    assert log.held_globals == (4, {"/ok.py": fine})
    batch = [["journaled", 4096], ["stopped", -1, "pause", 0, "/held.sock", [0], None, "not a dict"]]
    encoded = msgspec.msgpack.encode(batch)
    log.feed_frames(b"m" + len(encoded).to_bytes(4, "little") + encoded)
    assert log.journal_bytes == 4096 and log.held_globals is None


def test_thread_runs_and_a_schedules_outcome_a_child_sends_malformed_are_dropped(tmp_path):
    """Every thread recorded as skeletons: the runs (["ts", first index, thread, name]) and how far a
    schedule held (["followed", runs, of, given up]) come from the child's pipe. Entries of the wrong
    shape (a number as a million-digit text, a negative index, a name of a megabyte) are dropped or
    cut, never parsed into what they name; a run that starts before the last one replaces it."""
    import msgspec

    from neural_dap.trace.skeleton import SkeletonLog

    log = SkeletonLog(str(tmp_path), capacity=16)
    batch = [
        ["switch", 0, "skeletons"],
        ["followed", "9" * 1_000_000, 2, False],
        ["ts", "3", 1],
        ["ts", -5, 1],
        ["ts", 4, 1, "n" * (1 << 20)],
        ["ts", 2, 2],
        ["ts", 7, [1]],
        # who took each lock (["lk", thread, call, lock, outcome, order]): numbers only, none past 2^62
        ["lk", "9" * 1_000_000, 0, 0, 1, 0],
        ["lk", 1, 0, 1 << 63, 1, 0],
        ["lk", 1, 0, 0, 1],
        ["lk", 1, 0, 0, True, 0],
        ["lk", 1, 0, 0, 1, 1 << 63],
        ["lk", 1, 0, 0, 1, "0"],
        ["lk", 1, 1, 3, 1, 7],
        ["lk", 1, 0, 3, 1, 5],  # (said after a later take: placed before it)
    ]
    encoded = msgspec.msgpack.encode(batch)
    log.feed_frames(b"m" + len(encoded).to_bytes(4, "little") + encoded)
    assert not log.corrupt and log.thread_skeletons and log.followed is None
    assert log.runs == [(2, 2)] and len(log.thread_names[1]) == 200
    assert log.schedule() == array.array("q", [2, -2]).tobytes()  # (a run past the records: no events)
    assert log.locks() == array.array("q", [1, 0, 3, 1, 1, 1, 3, 1]).tobytes()


@pytest.mark.parametrize(
    "takes",
    [
        [0, 1, 0, 1],  # a thread's first call numbered 1: its calls must come in order, every one
        [0, 0, 0, 1, 0, 0, 0, 1],  # the same call twice
        [-1, 0, 0, 1],  # no such thread
        [0, 0, 1 << 40, 1],  # a lock numbered past every take there is (never allocated for)
        [1 << 40, 0, 0, 1],  # ... a thread too
        [0, 0, 0, 7],  # no such outcome
        [0, 0, 0],  # not quads
    ],
)
def test_who_took_each_lock_in_a_shape_no_recording_makes_is_refused_before_a_replay_follows_it(takes):
    """A replay takes locks in the order the recording's "lk" records say (the C tracer's group,
    `locks`): the plan is checked whole first and refused with a ValueError, never followed in
    part, and nothing is allocated for a thread or lock number larger than the plan's own size."""
    from neural_dap.trace._ctracer import Threads

    group = Threads(lambda: None, lambda switched: (None, False), False, True, lambda: None)
    with pytest.raises(ValueError):
        group.locks(array.array("q", takes).tobytes())
    # (a good plan is taken after; a call nested in another, a signal handler's, is said before it)
    group.locks(array.array("q", [0, 1, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0]).tobytes())


def test_library_return_values_a_child_sends_malformed_are_bounded_or_dropped(tmp_path):
    """The library's return values ride on a live stop's message (child/returned.py): entries of
    the wrong shape are dropped, a structure that does not decode keeps its text alone, a huge
    text is cut, and no more entries are kept than a stop can hold, whatever the message names."""
    import msgspec

    from neural_dap.trace.skeleton import SkeletonLog

    log = SkeletonLog(str(tmp_path), capacity=16)
    entries = [
        [1, "dumps", "'x'", 5],
        [1, "loads", ["{'a': 1}", "dict", [["a", ["nested", "weird", 7]]], 0], 6],  # children do not decode
        [1, "big", "y" * (1 << 20), 7],
        ["1", "bad", "z", 8],  # (an invocation that is no number)
        [1, "short", "z"],
        *([[2, f"f{k}", "0", 9] for k in range(5000)]),
    ]
    batch = msgspec.msgpack.encode([["stopped", 9, "step", None, None, None, entries]])
    log.feed_frames(b"m" + len(batch).to_bytes(4, "little") + batch)
    kept = {(inv, name): (text, value) for _event, inv, name, text, value in log.library_returns}
    assert kept[(1, "dumps")] == ("'x'", None)
    assert kept[(1, "loads")] == ("{'a': 1}", None)
    assert len(kept[(1, "big")][0]) == 1 << 16
    assert (1, "bad") not in kept and (1, "short") not in kept
    assert len(log.library_returns) <= 1024
