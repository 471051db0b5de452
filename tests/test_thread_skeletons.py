"""Every thread recorded as skeleton records (issue 37's threads plan, its first stage): from a
second thread on, each thread's events go to the one stream of 12-byte records, in the order they
happened, each run of one thread's events named by a ["ts", first index, thread] record; and a run
given that schedule records the same records, event for event, as the replay that rebuilds a
threaded stretch's values will have to. Not yet what a session opens (its values are not rebuilt):
`record_skeleton(thread_skeletons=True)` only."""

from __future__ import annotations

import array
import re
import textwrap

import numpy as np
import pytest

from neural_dap.core.actions import Action
from neural_dap.trace.recorder import Limits, Program, record_skeleton
from neural_dap.trace.skeleton import CALL_DTYPE, EVENT_DTYPE

from .test_child_real_world import _interpreter

WORKERS = textwrap.dedent(
    """
    import threading

    def step(total, i):
        return total + i * i % 7

    def work(n, out):
        total = 0
        for i in range(n):
            total = step(total, i)
        out.append(total)

    def main():
        results = []
        threads = [threading.Thread(target=work, args=(40_000 + k, results)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(results)

    print(main())
    """
)
LIMITS = Limits(max_events=5_000_000, wall_time=120)


def _recorded(path, python, **options):
    """(the log's facts, its event and call records as numpy arrays) of one recording."""
    rec = record_skeleton(Program(path=str(path)), LIMITS, python=python, thread_skeletons=True, **options)
    try:
        log = rec.log
        events = np.fromfile(log.events_path, dtype=EVENT_DTYPE, count=log.count)
        calls = np.fromfile(log.calls_path, dtype=CALL_DTYPE, count=log.calls_bytes // CALL_DTYPE.itemsize)
        output = "".join(text for _, _, text in log.outputs)
        return log, events, calls, output
    finally:
        rec.close()


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_every_thread_as_skeletons_is_one_stream_of_runs_and_a_run_under_its_schedule_the_same(tmp_path, version):
    """Four workers, each calling a function 40,000 times: every event of every thread is a record of
    the one stream; the runs say whose (each worker's lines are all there, in its own order, and
    every call's caller is an event of the same thread, however the threads interleaved); and the
    program run again under the recorded schedule records the very same records and runs (the
    threads handed over where the recording's did), and says it followed the schedule to its end."""
    python = _interpreter(version)
    path = tmp_path / "workers.py"
    path.write_text(WORKERS)
    log, events, calls, output = _recorded(path, python)
    assert log.outcome is not None and log.outcome[0] == "finished", log.outcome
    assert output.strip() == str(sum(sum(i * i % 7 for i in range(40_000 + k)) for k in range(4)))
    assert log.thread_skeletons and log.switched_at is not None
    assert not log.threaded, "nothing is captured in full"
    threads = log.thread_column()
    assert sorted(set(threads.tolist())) == [0, 1, 2, 3, 4]
    assert sorted(log.thread_names) == [1, 2, 3, 4] and all("work" in name for name in log.thread_names.values())
    stretch = events[log.switched_at :]
    lines = WORKERS.splitlines()
    loop, call = lines.index("    for i in range(n):") + 1, lines.index("        total = step(total, i)") + 1
    calls_made = []
    for worker in (1, 2, 3, 4):
        mine = stretch[threads == worker]
        kinds = mine["kind"] & 0x0F
        # each worker's own events in its own order, whatever the other threads did meanwhile: its
        # call and first line, then per iteration the loop line, the call line and step's call, line
        # and return, and after the loop the loop line, the append and its return
        n = (len(mine) - 5) // 5
        assert len(mine) == 5 * n + 5 and kinds[0] == 0 and kinds[-1] == 2
        body = mine[2 : 2 + 5 * n]
        assert (body["line"][0::5] == loop).all() and (body["line"][1::5] == call).all()
        assert ((body["kind"][2::5] & 0x0F) == 0).all() and ((body["kind"][4::5] & 0x0F) == 2).all()
        calls_made.append(n)
    assert sorted(calls_made) == [40_000 + k for k in range(4)]
    # the call records, in the order of the call events: each caller's latest event is its thread's
    call_events = np.nonzero((events["kind"] & 0x0F) == 0)[0]
    assert len(call_events) == len(calls)
    in_stretch = call_events >= log.switched_at
    callers = calls["caller_last"][in_stretch]
    callees = call_events[in_stretch]
    known = callers >= log.switched_at
    assert known.sum() > 100_000
    column = np.concatenate([np.full(log.switched_at, -1, dtype=np.int32), threads])
    assert (column[callers[known]] == column[callees[known]]).all()

    replay, replay_events, replay_calls, replay_output = _recorded(path, python, thread_schedule=log.schedule())
    assert replay.followed == (len(log.runs), len(log.runs), False)
    assert replay.runs == log.runs
    assert replay.count == log.count and (replay_events == events).all() and (replay_calls == calls).all()
    assert replay_output == output


def test_a_schedule_no_thread_can_follow_is_given_up_and_the_program_runs_to_its_end(tmp_path):
    """A schedule whose second run belongs to a thread the program never starts: every thread waits
    for it, and after the patience the schedule is given up, every thread runs free, the program
    ends as it would, and the recording says how far the schedule held."""
    path = tmp_path / "workers.py"
    path.write_text(WORKERS)
    impossible = array.array("q", [0, 3, 9, 100]).tobytes()
    log, _, _, output = _recorded(path, None, thread_schedule=impossible, schedule_patience=0.5)
    assert log.outcome is not None and log.outcome[0] == "finished"
    assert output.strip() == str(sum(sum(i * i % 7 for i in range(40_000 + k)) for k in range(4)))
    assert log.followed == (1, 2, True)


def test_a_replay_that_gave_the_threads_order_up_shows_nothing_from_where_it_did(tmp_path):
    """A replay of threads that gave the recorded order up (a lock held past the patience under
    load, a thread the recording never started) runs its threads free from there: its records may
    still be the recording's (a loop's same lines) while its values are another interleaving's (a
    counter under a lock, given to another thread). It was believed as long as the records agreed:
    a suite under load once showed a counter one off. The run it was in when it gave up is where the
    recording stops being rebuilt, with the reason; the states before stay."""
    from neural_dap.trace.skeleton import DivergenceError

    path = tmp_path / "workers.py"
    path.write_text(WORKERS.replace("40_000", "400"))
    rec = record_skeleton(Program(path=str(path)), LIMITS, thread_skeletons=True)
    try:
        runs = rec.log.runs
        assert len(runs) >= 4 and rec.diverged_at is None
        before = runs[2][0] - 1
        rec.state(before)  # (a window of the stretch, rebuilt as the recording ran)
        # what a worker's answer says when its threads ran free from their third run on
        rec._check_threads({"followed": 2, "runs": len(runs), "given_up": True, "why": "a lock was held"}, len(rec) - 1)
        assert rec.diverged_at == runs[2][0]
        with pytest.raises(DivergenceError, match=re.escape("gave the recorded order up (a lock was held")):
            rec.state(runs[2][0])
        assert rec.state(before).function in ("work", "main")
    finally:
        rec.close()


def test_threads_started_and_ended_one_after_another_each_their_own_runs_and_none_is_a_schedule(tmp_path):
    """A thread started per request, 200 of them one after another (each thread's tracer is dropped
    once its thread ends, while the one stream goes on): every thread's events are its own runs, the
    main thread's between them, and the run under the schedule follows it to the end. A program
    that never starts a second thread is recorded as ever: no runs, an empty schedule."""
    path = tmp_path / "per_request.py"
    path.write_text(
        textwrap.dedent(
            """
            import threading
            results = []
            def handle(i):
                s = 0
                for j in range(20):
                    s += j * i
                results.append(s)
            for i in range(200):
                t = threading.Thread(target=handle, args=(i,))
                t.start()
                t.join()
            print(len(results), sum(results))
            """
        )
    )
    log, events, _, output = _recorded(path, None)
    assert output.strip() == f"200 {sum(sum(j * i for j in range(20)) for i in range(200))}"
    numbers = [number for _, number in log.runs]
    assert sorted(set(numbers)) == list(range(201)) and numbers.count(0) >= 200
    threads = log.thread_column()
    for worker in (1, 100, 200):
        mine = events[log.switched_at :][threads == worker]
        assert len(mine) == 2 + 2 * 20 + 3 and (mine["kind"][0] & 0x0F) == 0  # (call, loop, ends, return)
    replay, replay_events, _, _ = _recorded(path, None, thread_schedule=log.schedule())
    assert replay.followed == (len(log.runs), len(log.runs), False)
    assert (replay_events == events).all()

    alone = tmp_path / "alone.py"
    alone.write_text("total = 0\nfor i in range(10):\n    total += i\nprint(total)\n")
    log, events, _, output = _recorded(alone, None)
    assert output == "45\n" and log.switched_at is None and log.runs == []
    assert log.schedule() == b"" and len(log.thread_column()) == len(events)


# Three workers on data of their own (nothing shared changes while they run): each thread's states
# are the same however the threads interleave, so two recordings of it compare thread by thread.
OWN_DATA = textwrap.dedent(
    """
    import threading

    def scale(values, k):
        out = []
        for v in values:
            out.append(v * k)
        return out

    def work(seed):
        values = [seed + i for i in range(40)]
        total = 0
        for round in range(30):
            values = scale(values, 1 + round % 3)
            total += sum(values) % 1000
        return total

    def main():
        threads = [threading.Thread(target=work, args=(k,), name=f"worker-{k}") for k in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return "done"

    main()
    """
)


def _per_thread(states, names) -> dict[str, list[tuple]]:
    """Each thread's states, by its name, as (event, function, line, locals); a thread's ident (in
    a `Thread`'s repr) is the system's, another in every run and in every replay."""
    out: dict[str, list[tuple]] = {}
    for state in states:
        shown = {name: re.sub(r"started \d+", "started", text) for name, text in state.locals.items()}
        out.setdefault(names.get(state.thread, "MainThread"), []).append(
            (state.event, state.function, state.line, shown)
        )
    return out


@pytest.mark.parametrize("version", ["3.11", "3.13"])
def test_a_threaded_stretch_recorded_as_skeletons_shows_each_threads_values_as_full_capture_does(tmp_path, version):
    """The values of every thread, rebuilt from skeleton records by a replay from the checkpoint
    before the second thread under the recorded schedule, are what recording every thread in full
    shows, state for state and thread by thread; and a session's threads, stacks and steps hold
    to the threads (a worker's stack is its own, the main thread waits at its join)."""
    from neural_dap.trace.execution import SkeletonExecution
    from neural_dap.trace.recorder import record

    python = _interpreter(version)
    path = tmp_path / "own_data.py"
    path.write_text(OWN_DATA)
    full = record(Program(path=str(path)), LIMITS, python=python)
    expected = _per_thread(full.states, full.log.thread_names)
    rec = record_skeleton(Program(path=str(path)), LIMITS, python=python, thread_skeletons=True)
    try:
        assert rec.log.thread_skeletons and rec.log.switched_at is not None
        names = {0: "MainThread", **rec.log.thread_names}
        got = _per_thread([rec.state(i) for i in range(len(rec))], names)
        assert rec.diverged_at is None, rec.divergence_message()
        assert sorted(got) == sorted(expected) == ["MainThread", "worker-0", "worker-1", "worker-2"]
        for name in ("worker-0", "worker-1", "worker-2"):
            assert got[name] == expected[name], name
        # (the main thread shows the workers' Thread objects, whose state is the run's interleaving)
        assert [state[:3] for state in got["MainThread"]] == [state[:3] for state in expected["MainThread"]]
        execution = SkeletonExecution(rec)
        semantics = execution.semantics
        # a stop in worker-1's `scale`: its stack is its own; the main thread stands at its join
        worker = next(number for number, name in names.items() if name == "worker-1")
        at = next(
            i
            for i in range(len(rec))
            if semantics.thread(i) == worker and rec.tree.event(i) == "line" and rec.state(i).function == "scale"
        )
        assert [f.function for f in execution.frames(at)] == ["scale", "work"]
        shown = [name for _, name in execution.threads(at)]
        assert shown[0] == "MainThread" and "worker-1" in shown
        main_frames = execution.thread_frames(at, 0)
        assert [f.function for f in main_frames] == ["main", "<module>"]
        # a step over from there stays in worker-1, however the other threads ran meanwhile
        after = execution.apply(at, Action("step_over"))
        assert semantics.thread(after) == worker and rec.state(after).function == "scale"
    finally:
        rec.close()


CONTENDED = textwrap.dedent(
    """
    import threading

    lock = threading.Lock()
    count = [0]

    def work(n):
        seen = 0
        for i in range(n):
            with lock:
                count[0] += 1
                seen = count[0]
        return seen

    def main():
        threads = [threading.Thread(target=work, args=(400,)) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return count[0]

    main()
    """
)


def _line_events(rec, line: int, first: int) -> list[int]:
    """The indices of the recording's line events at `line` (any file) from `first` on."""
    tree = rec.tree
    return [i for i in range(first, len(rec)) if tree.lines[i] == line and tree.event(i) == "line"]


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_threads_that_contend_for_a_lock_replay_with_each_take_in_the_recordings_order(tmp_path, version):
    """Three threads incrementing a counter under one lock: which waiting thread gets a released
    lock is the kernel's choice, made between events, so a replay that follows the schedule alone
    handed it to another thread and stalled (the fifteenth round's survey: 0 of 9). The recording
    says who took each lock; the replay that rebuilds the values takes them in that order, so the
    values every thread shows are the recording's: the counter each thread read under the lock,
    taken over all threads in the order the events happened, is 1, 2, 3, ... 1,200, and no
    replay diverged."""
    python = _interpreter(version)
    path = tmp_path / "contended.py"
    path.write_text(CONTENDED)
    rec = record_skeleton(Program(path=str(path)), LIMITS, python=python, thread_skeletons=True)
    try:
        assert rec.log.thread_skeletons and rec.log.switched_at is not None
        assert len(rec.log.lock_takes) // 4 >= 1200, "every take of the lock is said"
        seen = []
        for i in _line_events(rec, 9, rec.log.switched_at):  # `for i in range(n):`, after `seen = ...`
            state = rec.state(i)
            if state.locals.get("seen", "0") != "0":
                seen.append(int(state.locals["seen"]))
        assert rec.diverged_at is None, rec.divergence_message()
        assert seen == list(range(1, len(seen) + 1)) and len(seen) >= 1197
    finally:
        rec.close()


HELD_ACROSS_A_SLEEP = textwrap.dedent(
    """
    import threading
    import time

    lock = threading.Lock()
    count = [0]

    def work(n):
        seen = 0
        for i in range(n):
            with lock:
                count[0] += 1
                seen = count[0]
                time.sleep(0)
        return seen

    threads = [threading.Thread(target=work, args=(100_000,)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    """
)


@pytest.mark.parametrize("version", ["3.11", "3.13"])
def test_a_recording_cut_at_its_event_limit_replays_its_last_events_with_threads_blocked_in_a_take(tmp_path, version):
    """Threads that hold a lock across a sleep (the others block in its acquire), recorded until
    the event limit ends the program: there some thread is blocked in a take the recording never
    said. A replay used to let that call take the lock at once; the threads whose takes the
    recording did say then waited on it, and every stop near the end diverged (the sixteenth
    round's survey: a counter under a lock, 0 of 12; this program 8 of 8). The last stops show
    the counter as the recording left it, one more at each."""
    python = _interpreter(version)
    path = tmp_path / "held.py"
    path.write_text(HELD_ACROSS_A_SLEEP)
    rec = record_skeleton(
        Program(path=str(path)), Limits(max_events=6_000, wall_time=120), python=python, thread_skeletons=True
    )
    try:
        assert rec.log.outcome is not None and rec.log.outcome[0] == "event_limit"
        assert rec.log.switched_at is not None and len(rec) == 6_000
        # `for i in range(n):`, after the body
        seen = [int(rec.state(i).locals["seen"]) for i in _line_events(rec, 10, len(rec) - 400)]
        assert rec.diverged_at is None, rec.divergence_message()
        assert len(seen) >= 50 and seen == list(range(seen[0], seen[0] + len(seen)))
        assert seen[-1] >= 900, "the counter near the end is the recording's last values (an iteration: 6 events)"
    finally:
        rec.close()


POOL = textwrap.dedent(
    """
    from concurrent.futures import ThreadPoolExecutor

    def task(x):
        total = 0
        for i in range(2000):
            total += (x * i) % 13
        return total

    with ThreadPoolExecutor(4) as pool:
        print(sum(pool.map(task, range(40))))
    """
)


@pytest.mark.parametrize("version", ["3.11", "3.13"])
def test_a_thread_pools_workers_take_the_recordings_items(tmp_path, version):
    """A thread pool's workers take their items from a `SimpleQueue`. From 3.13 its put hands an
    item to the worker waiting longest, so which worker gets which item is decided as the gets
    start, not as they return: a replay that ordered the gets as they returned gave items to other
    workers, and every stop of the threaded stretch diverged (the sixteenth round's survey: 0 of 4
    recordings on 3.13; this test, so ordered, 2 of 3). Each stop shows the item a worker had in the
    recording."""
    python = _interpreter(version)
    path = tmp_path / "pool.py"
    path.write_text(POOL)
    rec = record_skeleton(Program(path=str(path)), LIMITS, python=python, thread_skeletons=True)
    try:
        first = rec.log.switched_at
        assert first is not None and rec.log.thread_skeletons
        # `total += ...` in the workers, at 8 places over the threaded stretch
        adding = _line_events(rec, 7, first)
        items = {rec.state(i).locals["x"] for i in adding[:: len(adding) // 8]}
        assert rec.diverged_at is None, rec.divergence_message()
        assert len(items) >= 6
    finally:
        rec.close()


TALKING_THREADS = textwrap.dedent(
    """
    import socket
    import sys
    import threading

    def serve(listener, got):
        conn, _ = listener.accept()
        with conn:
            while True:
                data = conn.recv(64)
                if not data:
                    break
                got.append(data.decode())
                conn.sendall(data.upper())

    def keep(path, lines):
        for line in lines:
            with open(path, "a") as fh:
                fh.write(line + "\\n")

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    got = []
    server = threading.Thread(target=serve, args=(listener, got))
    server.start()
    writer = threading.Thread(target=keep, args=(sys.argv[1], ["one", "two", "three"]))
    writer.start()
    client = socket.create_connection(listener.getsockname())
    replies = []
    for word in ["apple", "pear", "plum"]:
        client.sendall(word.encode())
        replies.append(client.recv(64).decode())
    client.close()
    server.join()
    writer.join()
    print(replies, got)
    """
)


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_threads_that_talk_to_the_world_replay_what_each_received_and_change_it_once(tmp_path, version):
    """A server thread receiving on a socket, a thread appending to a file, the main thread
    sending and reading replies. Each thread's calls are journaled as its own, and a replay
    answers each from its own, no sooner than the recording's returned (the sixteenth round's
    replay stopped at the first call of a thread other than the main one: "the replay's other
    thread called poll"). Every stop of the threaded stretch shows what the recording received, and
    the file has the one run's lines."""
    python = _interpreter(version)
    path = tmp_path / "talk.py"
    path.write_text(TALKING_THREADS)
    kept = tmp_path / "kept.txt"
    rec = record_skeleton(Program(path=str(path), argv=(str(kept),)), LIMITS, python=python, thread_skeletons=True)
    try:
        assert rec.outcome.kind == "finished", rec.outcome
        first = rec.log.switched_at
        assert first is not None and rec.log.thread_skeletons
        appending, sending = set(_line_events(rec, 13, first)), set(_line_events(rec, 32, first))
        received, replied = [], []
        for i in range(first, len(rec)):  # (every state of the threaded stretch is read)
            state = rec.state(i)
            if i in appending:  # `got.append(...)`
                received.append(state.locals["data"])
            if i in sending:  # `client.sendall(...)`
                replied.append(state.locals["replies"])
        assert rec.diverged_at is None, rec.divergence_message()
        assert received == ["b'apple'", "b'pear'", "b'plum'"]
        assert replied[-1] == "['APPLE', 'PEAR']"
        assert kept.read_text() == "one\ntwo\nthree\n", "the thread's writes were made once"
    finally:
        rec.close()


LOGGING_THREADS = textwrap.dedent(
    """
    import logging
    import sys
    import threading

    logging.basicConfig(filename=sys.argv[1], level=logging.INFO, format="%(threadName)s %(message)s")
    log = logging.getLogger("work")

    def work(k):
        for j in range(10):
            log.info("worker %d step %d", k, j)

    threads = [threading.Thread(target=work, args=(k,), name=f"w{k}") for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print("done")
    """
)


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_threads_logging_to_one_file_replay_the_recordings_run_each_time(tmp_path, version):
    """Three threads logging to one file: the level cache `Logger.isEnabledFor` fills is filled by
    whichever thread looks first, with no event or lock take between the look and the fill. The
    recorder's own question of each new code object (is it the user's?) looked at the file
    system, and a system call lets another thread run: a thread running logging's code for the
    first time let another look at the cache right there, which a replay could not place (the
    replay then took another lock than the recording: refused, 1 time in 2 or 3). A file is looked
    at once now. Recorded and replayed three times over, every state of the threaded stretch
    rebuilds, and the file holds each run's lines once."""
    python = _interpreter(version)
    path = tmp_path / "logging_threads.py"
    path.write_text(LOGGING_THREADS)
    for attempt in range(3):
        out = tmp_path / f"run{attempt}.log"
        rec = record_skeleton(Program(path=str(path), argv=(str(out),)), LIMITS, python=python, thread_skeletons=True)
        try:
            assert rec.outcome.kind == "finished", rec.outcome
            first = rec.log.switched_at
            assert first is not None and rec.log.thread_skeletons
            steps = [rec.state(i).locals.get("j") for i in range(first, len(rec), 3)]
            assert rec.diverged_at is None, (attempt, rec.divergence_message())
            assert any(step is not None for step in steps)
            lines = out.read_text().splitlines()
            assert sorted(lines) == sorted(f"w{k} worker {k} step {j}" for k in range(3) for j in range(10))
        finally:
            rec.close()


ENDED_UNJOINED = textwrap.dedent(
    """
    import threading
    import time

    def work():
        return sum(range(100))

    helper = threading.Thread(target=work, daemon=True)
    helper.start()
    time.sleep(0.2)
    print("done")
    """
)


@pytest.mark.parametrize("version", ["3.11", "3.12"])
def test_capturing_a_thread_that_ended_changes_nothing_in_the_replay(tmp_path, version):
    """With the libraries traced, the interpreter's exit (`threading._shutdown`) holds Thread
    objects in its frames. On 3.11 and 3.12 a Thread's repr asks `is_alive()`, which, for a
    thread that ended, takes its lock and marks it stopped: a replay that captured one changed
    the program it replays, and its last events diverged (the main thread's `_stop` found its lock
    gone). The capture shows the same text, changing nothing."""
    python = _interpreter(version)
    path = tmp_path / "ended.py"
    path.write_text(ENDED_UNJOINED)
    rec = record_skeleton(Program(path=str(path), trace="all"), LIMITS, python=python, thread_skeletons=True)
    try:
        assert rec.outcome.kind == "finished", rec.outcome
        texts = set()
        for i in range(len(rec) - 60, len(rec)):
            texts.update(v for v in rec.state(i).locals.values() if v.startswith("<_MainThread("))
        assert rec.diverged_at is None, rec.divergence_message()
        assert texts, "the exit's frames hold the main thread"
    finally:
        rec.close()


@pytest.mark.parametrize("by_the_recorder", [True, False])
def test_the_recorders_own_imports_leave_the_programs_folder_to_the_program(tmp_path, monkeypatch, by_the_recorder):
    """An import the recorder makes while the program runs (`_queue` as every thread becomes
    skeletons; a lazy import of its own) went through the program's folder first, like any
    import, and the import system kept that folder's listing: in the recording, from before a
    thread of the program added a file there; in a replay, as the folder is now. The program's
    next import listed the folder again in the recording but not in the replay, which diverged
    ("the replay called stat(...), which the recording did not at this point: the recording had
    opendir(...)": the talking-threads test above, on a busy machine). The recorder's imports look
    in the interpreter's folders only, through finders of their own; the program's are as ever."""
    import sys

    from neural_dap.trace.child import imports

    program_folder = str(tmp_path)
    monkeypatch.setattr(sys, "path", [program_folder, *sys.path])
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    monkeypatch.delitem(sys.modules, "colorsys", raising=False)
    monkeypatch.delitem(sys.path_importer_cache, program_folder, raising=False)
    imports.install(sys.path[1:], lambda: by_the_recorder)
    import colorsys

    assert colorsys.rgb_to_hsv(0.2, 0.4, 0.4)[:2] == (0.5, 0.5)
    assert (program_folder in sys.path_importer_cache) is not by_the_recorder


SERVING_MAIN_THREAD = textwrap.dedent(
    """
    import threading
    import urllib.request
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = ("hello " + self.path).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    def ask(port, answers):
        for k in range(5):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/r{k}", timeout=30) as reply:
                answers.append(reply.read().decode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = False  # (its request threads are kept, and reaped as they end)
    answers = []
    client = threading.Thread(target=ask, args=(server.server_address[1], answers))
    client.start()
    for _ in range(5):
        server.handle_request()
    client.join()
    server.server_close()
    print(answers)
    """
)


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_a_server_whose_main_thread_serves_replays_every_request(tmp_path, version):
    """The main thread serves, a thread per request (`ThreadingHTTPServer`), and reaps the request
    threads that ended as it starts the next (`is_alive`). The replay's capture showed the server's
    list of those threads: on 3.11 and 3.12 a `Thread`'s repr asks `is_alive()`, which marks an
    ended thread stopped, so the program's own `is_alive()` then took no lock where the recording's
    had, and the replay gave the order up at the first requests (0 of 6 before). Every handler's stop
    shows its request."""
    python = _interpreter(version)
    path = tmp_path / "serve.py"
    path.write_text(SERVING_MAIN_THREAD)
    rec = record_skeleton(Program(path=str(path)), LIMITS, python=python, thread_skeletons=True)
    try:
        assert rec.outcome.kind == "finished", rec.outcome
        first = rec.log.switched_at
        assert first is not None
        # `self.send_response(200)` in each handler
        bodies = [rec.state(i).locals["body"] for i in _line_events(rec, 9, first)]
        rec.state(len(rec) - 1)
        assert rec.diverged_at is None, rec.divergence_message()
        assert sorted(bodies) == [f"b'hello /r{k}'" for k in range(5)]
    finally:
        rec.close()


LOCKS_AS_EVER = textwrap.dedent(
    """
    import _queue, inspect, queue, threading

    def work(k, results):
        out = results[k] = []  # (each thread its own list: the order two threads append in is a race)
        lock, rlock, q = threading.Lock(), threading.RLock(), queue.SimpleQueue()
        out.append(lock.acquire(blocking=False))
        out.append(lock.acquire(timeout=0.01))  # (held: times out)
        lock.release()
        try:
            lock.release()
        except RuntimeError as exc:
            out.append(type(exc).__name__)
        with rlock, rlock:
            out.append(rlock.acquire(False))
            rlock.release()
        try:
            q.get_nowait()
        except queue.Empty:
            out.append("Empty")
        q.put(7)
        out.append(q.get(timeout=1))
        out.append(str(inspect.signature(_queue.SimpleQueue.get)))
        out.append(threading.Event().wait(0.01))

    results = {}
    threads = [threading.Thread(target=work, args=(k, results)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(results[0], results[1])
    """
)


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_locks_and_queues_answer_as_ever_while_the_recording_says_who_took_them(tmp_path, version):
    """The program's locks and queues go through the recorder's gate while every thread is
    recorded as skeletons: a try that fails, a timeout, releasing an unlocked lock, an RLock taken
    twice, a queue that is empty, an event's timed wait and the methods' signatures answer as in a
    plain run, and each call is said."""
    import subprocess

    python = _interpreter(version)
    path = tmp_path / "locks.py"
    path.write_text(LOCKS_AS_EVER)
    plain = subprocess.run([python or "python3", str(path)], capture_output=True, text=True, check=True).stdout
    rec = record_skeleton(Program(path=str(path)), LIMITS, python=python, thread_skeletons=True)
    try:
        assert rec.outcome.kind == "finished", rec.outcome
        assert rec.stdout == plain
        assert "False" in plain and "RuntimeError" in plain and "Empty" in plain and "block=True" in plain
        assert len(rec.log.lock_takes) // 4 >= 20
    finally:
        rec.close()
