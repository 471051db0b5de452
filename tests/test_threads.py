"""Every thread of the program, through a real DAP client over stdio: a breakpoint in a worker
stops there with the worker's stack and locals, `threads` lists the workers by name, steps stay in
the thread they started in (forward and back), continue and reverse-continue stop in any thread,
and `thread` events say when workers start. Both recordings (the default, which meets the
second thread and records every thread, and "full"), on 3.11 and 3.12."""

from __future__ import annotations

import textwrap

import pytest

from neural_dap.core.actions import Action
from neural_dap.trace import rolling, threaded
from neural_dap.trace.execution import FullExecution
from neural_dap.trace.recorder import Program, record, record_skeleton

from .dap_helpers import adapter, start
from .test_child_real_world import _interpreter

WORKER = textwrap.dedent(
    """\
    import threading


    def work(n, out):
        total = 0
        for k in range(n):
            total += k
        out.append(total)


    """
)
PROGRAM = WORKER + textwrap.dedent(
    """\
    results = []
    workers = [threading.Thread(target=work, args=(3 + i, results), name=f"worker-{i}") for i in range(2)]
    for t in workers:
        t.start()
        t.join()
    print(sorted(results))
    """
)
WORK_LOOP = 7  # total += k
MODULE_START = 14  # t.start()


def _program(tmp_path):
    path = tmp_path / "threads_demo.py"
    path.write_text(PROGRAM)
    return str(path)


def _joined(program: Program, version: str, stdout: str, engines: str = "C"):
    """The program recorded as a session records it (the switch to every thread at the second
    thread, by the C tracer of every thread, or by the Python engines), run to its end with
    `stdout`, and joined as a session opens it."""
    if engines == "C":
        pytest.importorskip("neural_dap.trace._ctracer", reason="the C tracer is not built here")
    engine = "auto" if engines == "C" else "settrace" if version == "3.11" else "monitoring"
    skeleton = record_skeleton(program, python=_interpreter(version), engine=engine)
    try:
        assert skeleton.outcome.kind == "finished" and skeleton.stdout == stdout
        joined, _ = threaded.join(skeleton)
    finally:
        skeleton.close()
    return joined


async def _stack(client, thread_id: int) -> list[tuple[str, int]]:
    frames = (await client.call("stackTrace", {"threadId": thread_id}))["stackFrames"]
    return [(f["name"], f["line"]) for f in frames]


async def _locals(client, thread_id: int) -> dict[str, str]:
    frames = (await client.call("stackTrace", {"threadId": thread_id}))["stackFrames"]
    scopes = (await client.call("scopes", {"frameId": frames[0]["id"]}))["scopes"]
    variables = (await client.call("variables", {"variablesReference": scopes[0]["variablesReference"]}))["variables"]
    return {v["name"]: v["value"] for v in variables}


async def _step(client, command: str, thread_id: int) -> dict:
    await client.call(command, {"threadId": thread_id})
    return (await client.wait_event("stopped"))["body"]


@pytest.mark.anyio
@pytest.mark.parametrize("recording", ["auto", "full", "threads in full", "recorded first"])
@pytest.mark.parametrize("version", ["3.11", "3.12"])
async def test_a_breakpoint_in_a_worker_thread_stops_there_with_its_stack_and_locals(tmp_path, recording, version):
    """ "auto" (a live session: every thread recorded as skeleton records, a stop's own event
    captured as it happens, the others rebuilt by a replay under the recorded schedule), "full"
    (every state of the run), "threads in full" (live, every thread's every state from the second
    one on), "recorded first" (`"live": false`: recorded to its end, every thread in full)"""
    path = _program(tmp_path)
    launch = {"program": path, "recording": recording, "stopOnEntry": False}
    if recording == "threads in full":
        launch.update(recording="auto", threads="full")
    elif recording == "recorded first":
        launch.update(recording="auto", live=False)
    python = _interpreter(version)
    if python:
        launch["python"] = python
    async with adapter() as client:
        stopped = await start(client, launch, {path: [{"line": WORK_LOOP}]})
        body = stopped["body"]
        assert body["reason"] == "breakpoint"
        worker = body["threadId"]
        assert worker != 1
        names = {t["id"]: t["name"] for t in (await client.call("threads"))["threads"]}
        assert names[1] == "MainThread" and names[worker] == "worker-0"
        assert (await _stack(client, worker)) == [("work", WORK_LOOP)]
        assert (await _locals(client, worker))["n"] == "3"
        # the main thread stands where it was: in the module, starting the worker
        main_stack = await _stack(client, 1)
        assert main_stack[0][0] == "<module>" and main_stack[0][1] in (MODULE_START, MODULE_START + 1)

        # steps stay in the worker, forward and back
        body = await _step(client, "next", worker)
        assert body["threadId"] == worker and (await _stack(client, worker)) == [("work", 6)]
        body = await _step(client, "stepBack", worker)
        assert body["threadId"] == worker and (await _stack(client, worker)) == [("work", WORK_LOOP)]

        # continue: the next hit, then the second worker's first hit
        seen = []
        for _ in range(3):
            body = await _step(client, "continue", worker)
            assert body["reason"] == "breakpoint"
            seen.append((body["threadId"], (await _locals(client, body["threadId"]))["k"]))
        second = seen[2][0]
        assert seen == [(worker, "1"), (worker, "2"), (second, "0")]
        assert second not in (1, worker)
        names = {t["id"]: t["name"] for t in (await client.call("threads"))["threads"]}
        assert names[second] == "worker-1" and worker not in names  # the first worker has ended

        # reverse-continue goes back into the first worker
        body = await _step(client, "reverseContinue", second)
        assert body["threadId"] == worker
        assert (await _locals(client, worker))["k"] == "2"
        await client.call("disconnect")
    started = [e["body"]["threadId"] for e in client.events_named("thread") if e["body"]["reason"] == "started"]
    assert worker in started and second in started


def test_a_recording_of_every_thread_tags_each_event_with_its_thread(tmp_path):
    rec = record(Program(path=_program(tmp_path)))
    assert rec.outcome.kind == "finished" and rec.stdout == "[3, 6]\n"
    assert rec.log.thread_names == {0: "MainThread", 1: "worker-0", 2: "worker-1"}
    work = [s for s in rec.states if s.function == "work"]
    assert {s.thread for s in work} == {1, 2}
    assert all(s.thread == 0 for s in rec.states if s.function == "<module>")


def test_a_threaded_recordings_events_are_out_of_the_collectors_sight_and_read_the_same(tmp_path):
    """Every event of every thread stays in the adapter for the session: walked by the cyclic
    collector at each of its older collections, a million of them cost a fifth of the adapter's time
    (collector_pause.py). Decoded, they are taken out of its sight; what they say is unchanged."""
    pytest.importorskip("neural_dap.trace._values", reason="the recorder's C parts are not built here")
    import gc

    rec = record_skeleton(Program(path=_program(tmp_path)))
    try:
        assert rec.outcome.kind == "finished", rec.outcome
        events = list(rec.log.threaded)
        assert events and not any(gc.is_tracked(event) for event in events)
        changes = [event[3] for event in events if event[0] == "l" and event[3]]
        assert changes and not any(gc.is_tracked(c) for c in changes)
        joined, _ = threaded.join(rec)
        assert joined.stdout == "[3, 6]\n"
        totals = [s.locals.get("total") for s in joined.states if s.function == "work" and s.event == "return"]
        assert sorted(totals) == ["3", "6"]
    finally:
        rec.close()


@pytest.mark.parametrize("version", ["3.11", "3.12"])
def test_with_just_my_code_false_the_threads_are_the_programs_and_the_recorders_are_not(tmp_path, version):
    """Libraries traced too: threading's own start-up code runs in each worker before it has a Thread
    object (no dummy is made for it, its name follows), and the recorder's own threads (which run
    traced library code too) are neither recorded nor mistaken for the program's."""
    python = _interpreter(version)
    rec = record(Program(path=_program(tmp_path), trace="all"), python=python)
    assert rec.outcome.kind == "finished" and rec.stdout == "[3, 6]\n"
    assert rec.log.thread_names == {0: "MainThread", 1: "worker-0", 2: "worker-1"}
    assert any(s.path.endswith("threading.py") for s in rec.states)  # the library was traced
    single = tmp_path / "single.py"
    single.write_text("import json\nprint(json.dumps({'a': [1, 2]}))\n")
    from neural_dap.trace.recorder import record_skeleton

    skeleton = record_skeleton(Program(path=str(single), trace="all"), python=python)
    try:
        assert skeleton.outcome.kind == "finished"  # the flusher is ours: no second recording
    finally:
        skeleton.close()


@pytest.mark.anyio
async def test_a_what_if_in_a_threaded_program_is_refused_with_the_reason(tmp_path):
    path = _program(tmp_path)
    async with adapter() as client:
        await start(client, {"program": path}, {path: [{"line": WORK_LOOP}]})
        stopped_thread = next(t["id"] for t in (await client.call("threads"))["threads"] if t["name"] == "worker-0")
        frames = (await client.call("stackTrace", {"threadId": stopped_thread}))["stackFrames"]
        scopes = (await client.call("scopes", {"frameId": frames[0]["id"]}))["scopes"]
        response = await client.request(
            "setVariable", {"variablesReference": scopes[0]["variablesReference"], "name": "total", "value": "7"}
        )
        assert not response["success"] and "more than one thread" in response["message"]
        assert (await _stack(client, stopped_thread)) == [("work", WORK_LOOP)]  # the session goes on


PAST_THE_BUDGET = WORKER + textwrap.dedent(
    """\
    def main():
        results = []
        for n in range(1500, 1506):
            worker = threading.Thread(target=work, args=(n, results))
            worker.start()
            worker.join()
        return results


    print(main())
    """
)


def test_a_threaded_run_past_its_budget_keeps_its_latest_events_with_the_frames_alive_there(tmp_path, monkeypatch):
    """A server lives under the recorder: past the budget of events since the switch, the oldest
    are dropped (trace/rolling.py), the program runs to its end, and the recording starts at the
    cut with every frame alive there: each later state's locals are as the program had them."""
    monkeypatch.setattr(rolling, "BUDGET", 4000)  # (about 18,000 events since the switch here)
    path = tmp_path / "workers.py"
    path.write_text(PAST_THE_BUDGET)
    skeleton = record_skeleton(Program(path=str(path)))
    expected = [sum(range(n)) for n in range(1500, 1506)]
    assert skeleton.outcome.kind == "finished" and skeleton.stdout == f"{expected}\n"
    assert skeleton.log.threaded.dropped > 10_000
    joined, _ = threaded.join(skeleton)
    assert len(joined.states) <= 4000 + 10
    # a worker running at the cut, and main waiting in its join, go on from their locals there
    loop = [s for s in joined.states if s.function == "work" and s.line == WORK_LOOP]
    assert loop and all(int(s.locals["total"]) == sum(range(int(s.locals["k"]))) for s in loop)
    assert all(joined.states[k].locals == s.locals for k, s in enumerate(joined.states) if k % 97 == 0)
    end = joined.states[-1]
    assert (end.function, end.event, end.value) == ("<module>", "return", "None")
    main_return = next(s for s in joined.states if s.function == "main" and s.event == "return")
    assert main_return.value == str(expected) and main_return.locals["results"] == str(expected)
    assert {s.thread for s in joined.states if s.function == "main"} == {0}
    # and the frames alive at the cut are on the stacks: main's, under the worker that ran then
    execution = FullExecution(joined)
    first_main = next(k for k, s in enumerate(joined.states) if s.function == "main")
    assert [f.function for f in execution.frames(first_main)] == ["main", "<module>"]
    assert [f.function for f in execution.thread_frames(0, 0)] == ["main", "<module>"]
    assert execution.thread_frames(0, 0)[0].locals["results"] == str(expected[:-1])


IN_PLACE = textwrap.dedent(
    """\
    import threading

    COUNT = 0
    LOG = [[0]]


    def work():
        global COUNT
        xs = [1, 2]
        xs[0] = 1.0
        xs[0] = True
        d = {"a": 1, "b": 2}
        del d["a"]
        d["a"] = 1
        COUNT = 1
        LOG[0].append(1)
        COUNT = 2


    t = threading.Thread(target=work)
    t.start()
    t.join()
    print(COUNT, LOG)
    """
)


@pytest.mark.parametrize("engines", ["C", "Python"])
@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_every_thread_shows_a_value_changed_in_place_even_to_an_equal_one(tmp_path, version, engines):
    """Recording every thread (by the C tracer of each thread, or by the Python engines where the C
    tracer is not built), values are compared by identity, never by equality: a list's 1 becoming
    1.0 and then True (all equal) shows each time, a dict's keys reordered show, and the module's
    globals a worker rebinds (an int) or changes in place (a list inside a list) show in the main
    thread's `<module>` frame at the worker's very next state, and at its return."""
    path = tmp_path / "in_place.py"
    path.write_text(IN_PLACE)
    joined = _joined(Program(path=str(path)), version, "2 [[0, 1]]\n", engines)
    assert joined.engine in (("ctrace", "cmonitoring") if engines == "C" else ("settrace", "monitoring"))
    work = [k for k, s in enumerate(joined.states) if s.function == "work" and s.event == "line"]

    def shown(name: str) -> list[str]:
        values = [joined.states[k].locals.get(name) for k in work]
        return [v for i, v in enumerate(values) if v is not None and (i == 0 or v != values[i - 1])]

    assert shown("xs") == ["[1, 2]", "[1.0, 2]", "[True, 2]"]
    assert shown("d") == ["{'a': 1, 'b': 2}", "{'b': 2}", "{'b': 2, 'a': 1}"]
    execution = FullExecution(joined)
    module = []
    for k in work + [k for k, s in enumerate(joined.states) if s.function == "work" and s.event == "return"]:
        frame = next(f for f in execution.thread_frames(k, 0) if f.function == "<module>")
        seen = (frame.locals["COUNT"], frame.locals["LOG"])
        if not module or module[-1] != seen:
            module.append(seen)
    assert module == [("0", "[[0]]"), ("1", "[[0]]"), ("1", "[[0, 1]]"), ("2", "[[0, 1]]")]


A_THREAD_EACH = textwrap.dedent(
    """\
    import threading


    def serve(n, out):
        answer = n * n
        print(answer)
        out.append(answer)


    def main():
        out = []
        print("serving")
        for n in range(60):
            worker = threading.Thread(target=serve, args=(n, out), name=f"request-{n}")
            worker.start()
            worker.join()
        return sum(out)


    print(main())
    """
)


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_a_thread_started_for_each_request_is_each_its_own_thread_with_its_own_values(tmp_path, version):
    """A server's way: a thread per request, each ended before the next starts (the tracer of an
    ended thread is dropped, and a new thread may get the same thread id): every request's events
    are its own thread's, numbered and named in order, with the locals that request had, and what
    it printed at its own next state."""
    path = tmp_path / "requests.py"
    path.write_text(A_THREAD_EACH)
    printed = "serving\n" + "".join(f"{n * n}\n" for n in range(60))
    joined = _joined(Program(path=str(path)), version, printed + f"{sum(n * n for n in range(60))}\n")
    serving = [s for s in joined.states if s.function == "serve"]
    assert {s.thread for s in serving} == set(range(1, 61))
    assert {joined.log.thread_names[k] for k in range(1, 61)} == {f"request-{n}" for n in range(60)}
    for s in serving:
        n = int(s.locals["n"])
        assert joined.log.thread_names[s.thread] == f"request-{n}"
        assert s.locals.get("answer", str(n * n)) == str(n * n)
    # what each request printed shows at its own next state (the line after its print), and what
    # main printed before the first thread (the rebuilt prefix) at main's next state
    lines = A_THREAD_EACH.splitlines()
    after = {text: lines.index(text) + 2 for text in ("    print(answer)", '    print("serving")')}
    after_print = [
        k
        for k, s in enumerate(joined.states)
        if (s.function, s.event, s.line) == ("serve", "line", after["    print(answer)"])
    ]
    assert [joined.log.stdout_at.get(k) for k in after_print] == [f"{n * n}\n" for n in range(60)]
    prefix = next(
        k for k, s in enumerate(joined.states) if (s.function, s.line) == ("main", after['    print("serving")'])
    )
    assert joined.log.stdout_at.get(prefix) == "serving\n"
    assert all(s.thread == 0 for s in joined.states if s.function == "main")


SUBCLASS_AND_REPRS = textwrap.dedent(
    """\
    import threading


    class Loud:
        def __repr__(self):
            return "Loud()"


    class Worker(threading.Thread):
        def run(self):
            total = 0
            for k in range(3):
                total += k
            self.total = total


    def deep(n, thing):
        if n:
            return deep(n - 1, thing)
        worker = Worker(name="worker")
        worker.start()
        worker.join()
        return worker.total


    print(deep(70, Loud()))
    """
)


@pytest.mark.parametrize("engines", ["C", "Python"])
@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_a_thread_class_of_the_programs_own_and_a_deep_stack_of_reprs_at_the_switch(tmp_path, version, engines):
    """The worker's first frame is the program's own `run` (a Thread subclass): it is called once,
    at depth 0, and returns. The switch comes 71 frames deep, each holding an object whose
    `__repr__` is the program's: the snapshots' reprs are never events, and every frame is there
    after the switch with its locals."""
    path = tmp_path / "subclass.py"
    path.write_text(SUBCLASS_AND_REPRS)
    joined = _joined(Program(path=str(path)), version, "3\n", engines)
    assert not [s for s in joined.states if s.function == "__repr__"]
    runs = [s for s in joined.states if s.function == "run"]
    assert [s.event for s in runs if s.event in ("call", "return")] == ["call", "return"]
    assert {s.thread for s in runs} == {1} and joined.log.thread_names[1] == "worker"
    execution = FullExecution(joined)
    line = next(k for k, s in enumerate(joined.states) if s.function == "run" and s.locals.get("total") == "1")
    assert [f.function for f in execution.frames(line)] == ["run"]
    main = list(execution.thread_frames(line, 0))
    assert [f.function for f in main] == ["deep"] * 71 + ["<module>"]
    assert all(f.locals["thing"] == "Loud()" for f in main[:-1])
    assert [f.locals["n"] for f in main[:3]] == ["0", "1", "2"]


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_with_just_my_code_false_a_threaded_recording_opens_and_holds_none_of_the_recorders_code(tmp_path, version):
    """The library traced too: the main thread switches to every thread right before `threading`
    starts the first worker, so the single-threaded prefix ends before the main thread's wait for
    it (which replayed otherwise: 'the program did not replay the same way', on 3.11 and 3.12), and
    the switch's own calls into the standard library (a context manager) are never events."""
    joined = _joined(Program(path=_program(tmp_path), trace="all"), version, "[3, 6]\n")
    assert joined.log.thread_names == {0: "MainThread", 1: "worker-0", 2: "worker-1"}
    files = {s.path.rsplit("/", 1)[-1] for s in joined.states}
    assert "threads_demo.py" in files and "threading.py" in files
    assert "contextlib.py" not in files and not any("neural_dap" in s.path for s in joined.states)
    work = [s for s in joined.states if s.function == "work" and s.event == "return"]
    assert sorted(s.value for s in work) == ["None", "None"] and {s.thread for s in work} == {1, 2}


ONE_SERVER = textwrap.dedent(
    """\
    import threading

    TICKS = [0]


    class Clock:
        def __repr__(self):
            return f"<Clock {TICKS[0]}>"


    class Server:
        def __init__(self):
            self.clock = Clock()


    class Handler:
        def __init__(self, server):
            self.server = server

        def handle(self):
            TICKS[0] += 1
            TICKS[0] += 1
            return TICKS[0]


    def serve(out):
        out.append(Handler(server).handle())


    server = Server()
    out = []
    for _ in range(2):
        worker = threading.Thread(target=serve, args=(out,))
        worker.start()
        worker.join()
    print(out)
    """
)


@pytest.mark.parametrize("engines", ["C", "Python"])
@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_an_object_two_values_show_at_one_event_shows_its_text_of_that_moment_at_each(tmp_path, version, engines):
    """A request handler's way: one object (the server's clock, whose repr tells the time) shown by
    two values at each event of a worker, the handler's `self.server` and the module's `server`
    the main thread shows. Its repr is made once an event (both are the same moment), never kept
    past it: at each line of the handler and at its return, both show the clock as it is then, and
    the handler's first line shows what its call showed."""
    path = tmp_path / "one_server.py"
    path.write_text(ONE_SERVER)
    joined = _joined(Program(path=str(path)), version, "[2, 4]\n", engines)
    execution = FullExecution(joined)

    def clock(value) -> str:
        server = value if value.type == "Server" else dict(value.children)["server"]
        return dict(server.children)["clock"].repr

    handled = [k for k, s in enumerate(joined.states) if s.function == "handle"]
    assert [joined.states[k].event for k in handled] == ["call", "line", "line", "line", "return"] * 2
    by_self = [clock(joined.states[k].values["self"]) for k in handled]
    assert by_self == [f"<Clock {n}>" for n in (0, 0, 1, 2, 2, 2, 2, 3, 4, 4)]
    by_module = []
    for k in handled:
        module = next(f for f in execution.thread_frames(k, 0) if f.function == "<module>")
        by_module.append(clock(module.values["server"]))
    assert by_module == by_self


GIL_LET_GO = textwrap.dedent(
    """\
    import threading
    import time

    go = threading.Event()
    items = []


    class Probe:
        def __repr__(self):
            go.set()
            time.sleep(0.05)  # the GIL goes to the worker, which appends
            return "<Probe>"


    def worker():
        go.wait()
        items.append(1)


    def count(items, probe):
        n = len(items)
        return n


    thread = threading.Thread(target=worker)
    thread.start()
    print(count(items, Probe()))
    thread.join()
    """
)


@pytest.mark.parametrize("engines", ["C", "Python"])
@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_what_another_thread_changed_during_a_calls_reprs_shows_at_the_frames_first_line(tmp_path, version, engines):
    """The reprs a call event makes are the program's code, and the GIL may go to another thread
    while they run: here a worker appends to the list the call showed empty. The frame's first
    line shows the list as it is then (with every thread recorded, that line is diffed like any
    other), as the `len` it computes says."""
    path = tmp_path / "gil_let_go.py"
    path.write_text(GIL_LET_GO)
    joined = _joined(Program(path=str(path)), version, "1\n", engines)
    counted = [s for s in joined.states if s.function == "count"]
    assert [(s.event, s.locals.get("items")) for s in counted[:2]] == [("call", "[]"), ("line", "[1]")]


def test_a_live_join_read_through_its_facts_answers_as_the_states_built_at_once(tmp_path):
    """A live session joins a threaded recording at each stop and builds states only where it is
    asked (the tree reads the log's facts): every action from every event, every state, what was
    printed between any two events, and where exceptions stop must be what the states built at once
    give."""
    path = tmp_path / "requests.py"
    path.write_text(A_THREAD_EACH)
    skeleton = record_skeleton(Program(path=str(path)))
    try:
        joiner = threaded.Joiner(skeleton)
        lazy = FullExecution(joiner.recording(), joiner.facts())
        whole = FullExecution(joiner.recording())
    finally:
        skeleton.close()
    assert len(lazy) == len(whole) > 500
    assert lazy.raised == whole.raised and lazy.uncaught == whole.uncaught
    assert lazy.threads(lazy.last) == whole.threads(whole.last)
    kinds = ("step_into", "step_over", "step_return", "inv_step_into", "inv_step_over", "inv_step_return")
    for i in range(len(whole)):
        assert lazy.state(i) == whole.state(i)
        for kind in kinds:
            assert lazy.apply(i, Action(kind)) == whole.apply(i, Action(kind)), (i, kind)
    for first, end in ((0, whole.last), (5, 200), (-1, 50), (300, whole.last)):
        assert lazy.output(first, end) == whole.output(first, end)
    printed = "serving\n" + "".join(f"{n * n}\n" for n in range(60)) + f"{sum(n * n for n in range(60))}\n"
    assert "".join(text for stream, text in lazy.output(-1, lazy.last) if stream == "stdout") == printed
    assert [f.function for f in lazy.frames(whole.last // 2)] == [f.function for f in whole.frames(whole.last // 2)]


ENDS_A_WORKER = textwrap.dedent(
    """\
    import threading


    def parse(text):
        return int(text)


    def worker(out):
        out.append(parse("1"))
        out.append(parse("boom"))


    out = []
    t = threading.Thread(target=worker, args=(out,), name="parser")
    t.start()
    t.join()
    print(out)
    """
)


def test_an_exception_that_ends_a_worker_stops_where_debugpy_stops_for_each_filter(tmp_path):
    """ "Uncaught Exceptions" alone stops where the exception that ends a worker thread was raised
    (the callee's line, as debugpy shows it); with "User Uncaught Exceptions" too, once, where it
    leaves the worker's own frame for threading (debugpy 3.12: one stop, for the second)."""
    path = tmp_path / "ends_a_worker.py"
    path.write_text(ENDS_A_WORKER)
    skeleton = record_skeleton(Program(path=str(path)))
    try:
        joined, _ = threaded.join(skeleton)
    finally:
        skeleton.close()
    execution = FullExecution(joined)

    def stops(filters: frozenset[str]) -> list[tuple[str, int, str]]:
        out, at = [], 0
        while (found := execution.first_exception(at, execution.last, filters)) is not None:
            state = execution.state(found)
            out.append((state.function, state.line, state.event))
            at = found
        return out

    assert stops(frozenset({"uncaught"})) == [("parse", 5, "exception")]
    assert stops(frozenset({"uncaught", "userUnhandled"})) == [("worker", 10, "exception")]
