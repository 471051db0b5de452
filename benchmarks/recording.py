"""Recording overhead, side by side: a plain run, the floor (the recorder's callbacks doing
nothing: what per-event callbacks cost by themselves), skeleton recording (and its ratio to the
floor), full capture; and what the first stop costs after a far jump in a skeleton recording.

Run: python benchmarks/recording.py [--python PATH ...] [--repeat N] [--scale K] [--no-full] [--engine E]
                                    [--pyttd PATH/bin/pyttd]
All runs happen in fresh child processes of the same interpreter; the plain run executes the
program without a tracer (`python -c`). Timings are wall-clock medians over --repeat runs, the
fixed cost of a recording (interpreter start-up, an empty traced call) subtracted (for the
skeleton column, that of an empty recording made right before each run); "/floor" is the median of
each repetition's own ratio (plain, floor, empty and recorded runs one after the other). "skeleton" is
`record_skeleton` (per-event records, fork checkpoints); "full" is `record` (every state, as
datasets use it) with its event log indexed, as a session does on first use. "far stop" is the
time to the state and call stack of an event far from the start (a breakpoint hit late in the run,
then reverse-continue to the start), each from a fresh recording: a replay from the nearest
checkpoint plus the materialised window.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from neural_dap.core.actions import Action
from neural_dap.trace.execution import SkeletonExecution
from neural_dap.trace.recorder import Limits, Program, record, record_skeleton
from neural_dap.trace.threaded import join as threaded_join

PROGRAMS = {
    "loop": (
        textwrap.dedent(
            """
            def work(n):
                total = 0
                for i in range(n):
                    total += i * i % 7
                return total
            """
        ),
        "work",
        "{loop}",
    ),
    "recursion": (
        textwrap.dedent(
            """
            def fib(n):
                if n < 2:
                    return n
                return fib(n - 1) + fib(n - 2)
            """
        ),
        "fib",
        "{fib}",
    ),
    "lists": (
        textwrap.dedent(
            """
            def bubble(xs):
                xs = list(xs)
                for i in range(len(xs)):
                    for j in range(len(xs) - 1 - i):
                        if xs[j] > xs[j + 1]:
                            xs[j], xs[j + 1] = xs[j + 1], xs[j]
                return xs
            """
        ),
        "bubble",
        "list(range({bubble}, 0, -1))",
    ),
    # the world in the loop: a file written and read back, a local socket (the journal records what
    # each read returned; a replay reads it from there and writes nothing)
    "io": (
        textwrap.dedent(
            """
            import os, socket, tempfile

            def exchange(n):
                here, there = socket.socketpair()
                fd, path = tempfile.mkstemp()
                total = 0
                with os.fdopen(fd, "w+") as fh:
                    for i in range(n):
                        here.send(b"ping %d" % i)
                        total += len(there.recv(64))
                        if i % 16 == 0:
                            fh.write("line %d\\n" % i)
                            fh.flush()
                            fh.seek(0)
                            total += len(fh.readline())
                            fh.seek(0, 2)
                os.unlink(path)
                here.close()
                there.close()
                return total
            """
        ),
        "exchange",
        "{io}",
    ),
}


def plain_seconds(python: str, path: Path, func: str, args: str) -> float:
    code = (
        "import time, runpy\n"
        f"ns = runpy.run_path({str(path)!r})\n"
        f"args = eval({('(' + args + ',)')!r}, ns)\n"
        "t = time.perf_counter()\n"
        f"ns[{func!r}](*args)\n"
        "print(time.perf_counter() - t)\n"
    )
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


FLOOR = """
import sys, time, runpy, types
sys.path.insert(0, {root!r})
from neural_dap.trace import _ctracer
ns = runpy.run_path({path!r})
args = eval({args!r}, ns)
codes = [v.__code__ for v in ns.values() if isinstance(v, types.FunctionType)]
if hasattr(sys, "monitoring"):
    # the recorder's events on the program's code, each answered by a C callback that does nothing
    mon, E, tool = sys.monitoring, sys.monitoring.events, 5
    mon.use_tool_id(tool, "floor")
    _ctracer.floor_set_disable(mon.DISABLE)
    for event in (E.PY_START, E.PY_RESUME, E.LINE, E.PY_RETURN, E.PY_YIELD):
        mon.register_callback(tool, event, _ctracer.floor_noop)
    mon.register_callback(tool, E.JUMP, _ctracer.floor_jump)
    mon.register_callback(tool, E.CALL, _ctracer.floor_call)  # (the recorder's CALL: calls without frames)
    for code in codes:
        mon.set_local_events(
            tool, code, E.PY_START | E.PY_RESUME | E.LINE | E.PY_RETURN | E.PY_YIELD | E.JUMP | E.CALL
        )
else:
    import threading

    def every_thread(frame, event, arg):  # (settrace is per thread: each thread `threading` starts too)
        _ctracer.floor_settrace(True)

    threading.settrace(every_thread)
    _ctracer.floor_settrace(True)  # a C trace function that does nothing (every call, line, return)
t = time.perf_counter()
ns[{func!r}](*args)
print(time.perf_counter() - t)
"""


def floor_seconds(python: str, path: Path, func: str, args: str) -> float:
    """The program with the recorder's callbacks doing nothing: what per-event callbacks cost by
    themselves (no recording work at all), the limit of a recorder built on them."""
    root = str(Path(__file__).resolve().parent.parent)
    code = FLOOR.format(root=root, path=str(path), args=f"({args},)" if args else "()", func=func)
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def startup_seconds(python: str, path: Path, func: str, skeleton: bool) -> float:
    """A traced run of a function that returns at once: the fixed cost of a recording."""
    t = time.perf_counter()
    program = Program(str(path), source=f"def {func}(*a):\n    return 0\n", entry=func)
    if skeleton:
        record_skeleton(program, python=python).close()
    else:
        record(program, python=python)
    return time.perf_counter() - t


def live_startup_seconds(python: str, path: Path) -> float:
    """A live recording (`record_live`) of a function that returns at once: its fixed cost."""
    t = time.perf_counter()
    program = Program(str(path), source="def base(*a):\n    return 0\n", entry="base")
    record_live(program, Limits(), python).close()
    return time.perf_counter() - t


def skeleton_seconds(python: str, program: Program, limits: Limits, engine: str) -> tuple[float, int, float]:
    t = time.perf_counter()
    rec = record_skeleton(program, limits, python=python, engine=engine)
    seconds = time.perf_counter() - t
    assert rec.outcome.kind == "finished", rec.outcome
    bytes_per_event = (Path(rec.log.events_path).stat().st_size + Path(rec.log.calls_path).stat().st_size) / len(rec)
    n = len(rec)
    rec.close()
    return seconds, n, bytes_per_event


def far_stops(python: str, program: Program, limits: Limits) -> tuple[float, float]:
    """(seconds to a breakpoint hit at the last line event, then to reverse-continue to the start)."""
    execution = SkeletonExecution(record_skeleton(program, limits, python=python))
    try:
        tree = execution.tree
        last_line = int(tree.lines[tree.line_events[-1]])
        t = time.perf_counter()
        hit = execution.apply(0, Action.at_lines("breakpoint", [last_line]))
        execution.state(hit), execution.frames(hit)
        late = time.perf_counter() - t
        t = time.perf_counter()
        back = execution.apply(hit, Action.at_lines("inv_breakpoint", [-1]))
        execution.state(back), execution.frames(back)
        return late, time.perf_counter() - t
    finally:
        execution.close()


# Whole scripts for the second table: a program whose work runs in four threads (the recording
# switches in place to every thread, in full, by the Python tracers, at the second thread: nothing
# runs twice), a ThreadingHTTPServer answering requests under the recorder, and library-heavy code
# recorded with justMyCode true (the default) and false (the libraries traced too)
THREADED = textwrap.dedent(
    """
    import threading

    def work(n, out):
        total = 0
        for i in range(n):
            total += i * i % 7
        out.append(total)

    def main():
        results = []
        threads = [threading.Thread(target=work, args=({n}, results)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(results)

    if __name__ == "__main__":
        print(main())
    """
)
# Threads that call methods of the program's objects: `self` walked at every line, one attribute
# changed at each (the values a full capture encodes, where THREADED's are ints)
OBJECTS = textwrap.dedent(
    """
    import threading

    class Account:
        def __init__(self, owner, n):
            self.owner, self.number, self.balance, self.currency = owner, n, 0, "EUR"
            self.open, self.limit, self.history, self.bank = True, 1000, [], None

        def deposit(self, amount):
            self.balance += amount
            self.history.append(amount)
            if len(self.history) > 8:
                self.history.pop(0)
            return self.balance

    def work(account, n):
        for k in range(n):
            account.deposit(k % 7)

    def main():
        accounts = [Account(f"owner{{i}}", i) for i in range(2)]
        threads = [threading.Thread(target=work, args=(a, {n})) for a in accounts]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(a.balance for a in accounts)

    if __name__ == "__main__":
        print(main())
    """
)
HTTP_SERVER = textwrap.dedent(
    """
    import sys
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

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = False  # server_close waits for the last answers
    with open(sys.argv[1], "w") as fh:
        fh.write(str(server.server_address[1]))
    for _ in range({n}):
        server.handle_request()
    server.server_close()
    """
)


def served_per_second(start, port_file: Path, requests: int) -> float:
    """Requests a second a client gets from the server `start()` starts (one at a time, keep-alive off)."""
    import threading
    import urllib.request

    port_file.unlink(missing_ok=True)
    runner = threading.Thread(target=start, daemon=True)
    runner.start()
    deadline = time.monotonic() + 60
    while not (port_file.exists() and port_file.read_text().strip()):
        if time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    port = int(port_file.read_text())
    t = time.perf_counter()
    for k in range(requests):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/r{k}", timeout=60) as answer:
            answer.read()
    seconds = time.perf_counter() - t
    runner.join(timeout=120)
    return requests / seconds


LIBRARIES = textwrap.dedent(
    """
    import json, re, textwrap

    def main(n):
        words = 0
        for k in range(n):
            text = json.dumps({{"id": k, "tags": ["a", "b", str(k)], "note": "lorem ipsum " * 5}})
            words += len(re.findall(r"\\w+", textwrap.fill(json.loads(text)["note"], 20)))
        return words

    print(main({n}))
    """
)


JOURNAL_READS = textwrap.dedent(
    """
    import os

    def reads(path, n):
        fd = os.open(path, os.O_RDONLY)
        got = 0
        for _ in range(n):
            got += len(os.read(fd, 1))
        os.close(fd)
        return got
    """
)


def journal_cost(python: str, tmp: Path, reads: int) -> None:
    """What the journal costs beyond the data the program read: `reads` reads of one byte."""
    data = tmp / "data.bin"
    data.write_bytes(b"x" * reads)
    path = tmp / "reads.py"
    path.write_text(JOURNAL_READS)
    program = Program(str(path), entry="reads", entry_args=f"{str(data)!r}, {reads}")
    rec = record_skeleton(program, Limits(max_events=100_000_000, wall_time=600), python=python)
    try:
        assert rec.outcome.kind == "finished", rec.outcome
        size = Path(rec.journal_file).stat().st_size
    finally:
        rec.close()
    beyond = (size - reads) / 2**20
    print(f"journal: {reads:,} reads of one byte take {size / 2**20:.1f} MiB, {beyond:.1f} MiB beyond the data read")


def script_seconds(python: str, path: Path) -> float:
    """A plain run of a whole script, interpreter start-up left out."""
    t = time.perf_counter()
    subprocess.run([python, str(path)], capture_output=True, check=True)
    total = time.perf_counter() - t
    t = time.perf_counter()
    subprocess.run([python, "-c", "pass"], capture_output=True, check=True)
    return max(total - (time.perf_counter() - t), 1e-6)


def record_live(program: Program, limits: Limits, python: str, **options):
    """The program recorded as a debug session runs it by default (live: it stops at its first
    event for the session, then runs on with no breakpoint to its end; from a second thread on,
    every thread as skeletons); the finished recording."""
    import threading

    from neural_dap.trace.live_recording import LiveControl

    control = LiveControl()
    finished: list = []
    runner = threading.Thread(
        target=lambda: finished.append(record_skeleton(program, limits, python=python, live=control, **options))
    )
    runner.start()
    if control.next_stop(timeout=120) is not None:
        control.run()  # (no breakpoint, no step: on to the end)
    runner.join()
    return finished[0]


def thread_skeletons(
    python: str,
    threaded: Path,
    limits: Limits,
    base_skeleton: float,
    plain: float,
    floor: float,
    version: str,
    repeat: int,
) -> None:
    """The four workers with every thread recorded as skeletons, opened as a session opens them
    (launch key `threads: "skeletons"`: the tree of every thread, no values yet), and the first stop
    in a worker (its values rebuilt by a replay from the checkpoint before the second thread, under
    the recorded schedule); then the program run again under that schedule from its start, as a
    check that a replay records the very same records."""
    recorded, opened, stops, replayed, same, live = [], [], [], [], [], []
    # (a live recording's own fixed cost: the empty call recorded live, its first stop's round trip
    # to the session included, as `base_skeleton` is a recording's to its end)
    live_startup_seconds(python, threaded.with_name("base_live.py"))  # (a first one warms the caches up)
    base_live = statistics.median(live_startup_seconds(python, threaded.with_name("base_live.py")) for _ in range(5))
    for _ in range(repeat):
        t = time.perf_counter()
        record_live(Program(str(threaded)), limits, python, thread_skeletons=True).close()
        live.append(time.perf_counter() - t - base_live)
        t = time.perf_counter()
        first = record_skeleton(Program(str(threaded)), limits, python=python, thread_skeletons=True)
        recorded.append(time.perf_counter() - t - base_skeleton)
        execution = SkeletonExecution(first)  # what a session opens
        opened.append(time.perf_counter() - t - base_skeleton)
        n = first.log.count
        switched = first.log.switched_at or 0
        t = time.perf_counter()
        middle = (switched + n) // 2
        execution.frames(middle)  # a stop there: the worker's values, by a replay under the schedule
        stops.append(time.perf_counter() - t)
        assert first.diverged_at is None, first.divergence_message()
        t = time.perf_counter()
        again = record_skeleton(
            Program(str(threaded)), limits, python=python, thread_skeletons=True, thread_schedule=first.log.schedule()
        )
        replayed.append(time.perf_counter() - t - base_skeleton)
        same.append(
            again.log.count == n
            and again.log.runs == first.log.runs
            and Path(first.log.events_path).read_bytes()[: 12 * n] == Path(again.log.events_path).read_bytes()[: 12 * n]
        )
        runs = len(first.log.runs)
        first.close()
        again.close()
    record_x, replay_x = statistics.median(recorded) / plain, statistics.median(replayed) / plain
    open_x = statistics.median(opened) / plain
    live_x = statistics.median(live) / plain
    print(
        f"{version:>8} {'threads, live session':>22} {n:>10} {plain * 1e3:>9.1f} {live_x:>8.1f}x  "
        f"as a debug session runs it by default (live, every thread as skeletons) = {live_x * plain / floor:.1f}x floor"
        f" (a live recording's fixed {base_live * 1e3:.0f} ms left out, as a recording's is from the others)"
    )
    print(
        f"{version:>8} {'threads as skeletons':>22} {n:>10} {plain * 1e3:>9.1f} {open_x:>8.1f}x  "
        f"as a session opens it (launch key threads: skeletons) = {open_x * plain / floor:.1f}x floor "
        f"(recorded {record_x:.1f}x, {runs} runs); a stop in a worker {statistics.median(stops) * 1e3:.0f} ms; "
        f"run under its schedule {replay_x:.1f}x, same records {sum(same)} of {len(same)} (median of {repeat})"
    )


def whole_programs(
    python: str, tmp: Path, scale: int, limits: Limits, base_skeleton: float, base_full: float, repeat: int
) -> None:
    print(f"\n{'python':>8} {'program':>22} {'events':>10} {'plain ms':>9} {'recorded':>9}  how")
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True
    ).stdout.strip()
    threaded = tmp / "threaded.py"
    # (2M events: at 200k a run of 8 ms, the fixed costs of starting and ending a recording, some
    # tens of ms, moved the ratios by more than the recording's own work)
    threaded.write_text(THREADED.format(n=250_000 * scale))
    plain = statistics.median(script_seconds(python, threaded) for _ in range(repeat))
    floor = floor_seconds(python, threaded, "main", "")
    t = time.perf_counter()
    skeleton = record_skeleton(Program(str(threaded)), limits, python=python)  # switches at the second thread
    recorded = time.perf_counter() - t - base_skeleton
    joined, _ = threaded_join(skeleton)  # what a session opens: the prefix rebuilt, joined to the rest
    seconds = time.perf_counter() - t - base_skeleton
    skeleton.close()
    threads = len({s.thread for s in joined.states})
    print(
        f"{version:>8} {'threads (4 workers)':>22} {len(joined.states):>10} {plain * 1e3:>9.1f} "
        f"{seconds / plain:>8.1f}x  every thread ({threads}) in full from the second, {joined.engine};"
        f" recorded {recorded / plain:.1f}x,"
        f" floor {floor / plain:.1f}x; once"
    )
    thread_skeletons(python, threaded, limits, base_skeleton, plain, floor, version, repeat)
    objects = tmp / "objects.py"
    objects.write_text(OBJECTS.format(n=20_000 * scale))
    plain = statistics.median(script_seconds(python, objects) for _ in range(repeat))
    t = time.perf_counter()
    skeleton = record_skeleton(Program(str(objects)), limits, python=python)
    recorded = time.perf_counter() - t - base_skeleton
    events = len(skeleton.log.threaded)
    skeleton.close()
    print(
        f"{version:>8} {'objects (2 workers)':>22} {events:>10} {plain * 1e3:>9.1f} "
        f"{recorded / plain:>8.1f}x  every thread in full from the second; recorded only, once"
    )
    server = tmp / "server.py"
    requests = 200 * scale
    server.write_text(HTTP_SERVER.format(n=requests))
    port_file = tmp / "port.txt"
    program = Program(str(server), argv=(str(port_file),))
    # plain and recorded runs taken in turns, the median of each: one run's rate varies by up to 4x on
    # a busy two-core machine (a single pair once read 67% where the medians say a fifth)
    plain_rates, recorded_rates, skeleton_rates, live_rates = [], [], [], []
    for _ in range(repeat):
        live_rates.append(
            served_per_second(
                lambda: record_live(program, limits, python, thread_skeletons=True).close(), port_file, requests
            )
        )
        plain_rates.append(
            served_per_second(
                lambda: subprocess.run([python, str(server), str(port_file)], check=True), port_file, requests
            )
        )
        recorded_rates.append(
            served_per_second(lambda: record_skeleton(program, limits, python=python).close(), port_file, requests)
        )
        skeleton_rates.append(
            served_per_second(
                lambda: record_skeleton(program, limits, python=python, thread_skeletons=True).close(),
                port_file,
                requests,
            )
        )
    plain_rate, recorded_rate = statistics.median(plain_rates), statistics.median(recorded_rates)
    skeleton_rate = statistics.median(skeleton_rates)
    live_rate = statistics.median(live_rates)
    print(
        f"{version:>8} {'server, live session':>22} {requests:>10} {1e3 / plain_rate:>9.2f} "
        f"{plain_rate / live_rate:>8.1f}x  {live_rate:.0f} requests/s as a debug session runs it by default"
        f" (live, every thread as skeletons: {live_rate / plain_rate:.0%} of plain)"
    )
    print(
        f"{version:>8} {'ThreadingHTTPServer':>22} {requests:>10} {1e3 / plain_rate:>9.2f} "
        f"{plain_rate / recorded_rate:>8.1f}x  {plain_rate:.0f} requests/s plain, {recorded_rate:.0f} recorded"
        f" ({recorded_rate / plain_rate:.0%}), {skeleton_rate:.0f} with every thread as skeletons"
        f" ({skeleton_rate / plain_rate:.0%}); plain ms: per request"
    )
    libraries = tmp / "libraries.py"
    libraries.write_text(LIBRARIES.format(n=3000 * scale))
    plain = statistics.median(script_seconds(python, libraries) for _ in range(repeat))
    for trace, label in (("mine", "justMyCode true"), ("all", "justMyCode false")):
        t = time.perf_counter()
        skeleton = record_skeleton(Program(str(libraries), trace=trace), limits, python=python)
        seconds = time.perf_counter() - t - base_skeleton
        assert skeleton.outcome.kind == "finished", skeleton.outcome
        events = len(skeleton)
        skeleton.close()
        print(
            f"{version:>8} {'libraries (' + label + ')':>22} {events:>10} {plain * 1e3:>9.1f} "
            f"{seconds / plain:>8.1f}x  skeleton"
        )


def pyttd_rows(pyttd: str, tmp: Path, sizes: dict) -> None:
    """pyttd (`py-tt-debug`, the closest competitor: a C recorder writing every frame to SQLite)
    recording the same programs as whole scripts: `pyttd record` against a plain run of its own
    interpreter, start-up (an empty script, each way) subtracted; one run each."""
    python = str(Path(pyttd).with_name("python"))
    version = subprocess.run(
        [python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True
    ).stdout.strip()
    print(f"\n{'python':>8} {'program':>10} {'frames':>10} {'plain ms':>9} {'pyttd':>9}  (py-tt-debug, pyttd record)")

    def recorded(script: Path) -> tuple[float, str]:
        db = script.with_suffix(".db")
        t = time.perf_counter()
        out = subprocess.run(
            [pyttd, "record", "--max-frames", "0", "--db-path", str(db), str(script)],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        seconds = time.perf_counter() - t
        for leftover in tmp.glob(db.name + "*"):
            leftover.unlink()
        frames = next((line for line in out.stdout.splitlines() if "frame_count" in line), "")
        return seconds, frames.split("'frame_count': ")[-1].split(",")[0] if frames else "?"

    empty = tmp / "pyttd_empty.py"
    empty.write_text("pass\n")
    base, _ = recorded(empty)
    for name, (source, func, args) in PROGRAMS.items():
        script = tmp / f"pyttd_{name}.py"
        script.write_text(source + f"\n{func}({args.format(**sizes)})\n")
        plain = script_seconds(python, script)
        seconds, frames = recorded(script)
        ratio = (seconds - base) / plain
        print(f"{version:>8} {name:>10} {frames:>10} {plain * 1e3:>9.1f} {ratio:>8.0f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", action="append", help="interpreters to measure (default: this one)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--scale", type=int, default=1, help="multiply the programs' sizes (1: ~0.5-2 M events each)")
    parser.add_argument("--no-full", action="store_true", help="skip full capture (slow on big programs)")
    parser.add_argument(
        "--engine",
        default="auto",
        help="the skeleton recording's engine: auto (the C tracer), or monitoring / settrace (the Python ones)",
    )
    parser.add_argument(
        "--pyttd", help="pyttd's command (py-tt-debug, 3.12+) to record the same programs with, for comparison"
    )
    opts = parser.parse_args()
    pythons = opts.python or [sys.executable]
    # about a million events each at scale 1: long enough that a ratio measures the per-event cost,
    # not the fixed cost of starting and ending a recording (about 20 ms more than an empty one)
    sizes = {
        "loop": 500_000 * opts.scale,
        "fib": 25 + (opts.scale > 1) * 3,
        "bubble": 800 * opts.scale,
        "io": 60_000 * opts.scale,
    }
    limits = Limits(max_events=100_000_000, wall_time=600, memory_mb=16384)
    print(
        f"{'python':>8} {'program':>10} {'events':>10} {'plain ms':>9} {'floor':>7} {'skeleton':>9} {'/floor':>7} "
        f"{'full':>9} {'B/event':>8} {'far stop':>9} {'back':>7}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for python in pythons:
            base_skeleton = statistics.median(
                startup_seconds(python, Path(tmp) / "base.py", "base", True) for _ in range(3)
            )
            base_full = statistics.median(
                startup_seconds(python, Path(tmp) / "base.py", "base", False) for _ in range(3)
            )
            version = subprocess.run(
                [python, "-c", "import sys; print(sys.version.split()[0])"], capture_output=True, text=True
            ).stdout.strip()
            for name, (source, func, args) in PROGRAMS.items():
                args = args.format(**sizes)
                path = Path(tmp) / f"{name}.py"
                path.write_text(source)
                program = Program(str(path), entry=func, entry_args=args)
                # each repetition a plain run, a floor run, an empty recording and the recording, one
                # after the other: this machine's speed drifts by 10% over minutes, more than a row's
                # margin, so the ratio to the floor is taken within each repetition (the recording
                # less the empty one made right before it), then its median
                plains, floors, runs, to_floor = [], [], [], []
                for _ in range(opts.repeat):
                    plains.append(plain_seconds(python, path, func, args))
                    floors.append(floor_seconds(python, path, func, args))
                    base = startup_seconds(python, Path(tmp) / "base.py", "base", True)
                    run = skeleton_seconds(python, program, limits, opts.engine)
                    runs.append((run[0] - base, *run[1:]))
                    to_floor.append(runs[-1][0] / floors[-1])
                plain, floor = statistics.median(plains), statistics.median(floors)
                skeleton = statistics.median(r[0] for r in runs)
                events, per_event = runs[0][1], runs[0][2]
                late, back = far_stops(python, program, limits)
                full_text = "-"
                if not opts.no_full:
                    t = time.perf_counter()
                    len(record(program, limits, python=python).states)  # the states, as a session reads them
                    full = time.perf_counter() - t - base_full
                    full_text = f"{full / plain:>8.1f}x"
                print(
                    f"{version:>8} {name:>10} {events:>10} {plain * 1e3:>9.1f} {floor / plain:>6.1f}x "
                    f"{skeleton / plain:>8.1f}x {statistics.median(to_floor):>6.2f}x {full_text:>9} "
                    f"{per_event:>8.1f} {late * 1e3:>7.0f}ms {back * 1e3:>5.0f}ms"
                )
            whole_programs(python, Path(tmp), opts.scale, limits, base_skeleton, base_full, opts.repeat)
            journal_cost(python, Path(tmp), 1_000_000)
        if opts.pyttd:
            pyttd_rows(opts.pyttd, Path(tmp), sizes)


if __name__ == "__main__":
    main()
