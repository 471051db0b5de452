"""The recording child's main: read the configuration, limit the debuggee, run it under an engine.
Standard library only."""

from __future__ import annotations

import ast
import builtins
import json
import os
import signal
import sys
import threading
import types
from _thread import get_ident
from collections.abc import Callable

from neural_dap.trace.child import imports as recorder_imports
from neural_dap.trace.child.channel import Channel, Limits
from neural_dap.trace.child.dressed import like
from neural_dap.trace.child.engines import choose_engine, every_thread_in_c
from neural_dap.trace.child.forked import discard_past_the_limit, follow_forked_workers
from neural_dap.trace.child.journal import JOURNAL, PLUMBING, plumbing, sandboxed
from neural_dap.trace.child.lifetime import (
    OWN_FORK,
    die_if_signalled,
    die_with_parent,
    hide_our_forks,
    keep_events_when_terminated,
    register_at_fork_of_ours,
)
from neural_dap.trace.child.recorder import PASS, TEE, Capture, Recorder, set_output_mode
from neural_dap.trace.child.skeleton import Skeleton
from neural_dap.trace.child.switch import ThreadSwitch
from neural_dap.trace.child.threads import ThreadTable, quiet_thread_reprs, wait_for_threads, watch_for_threads
from neural_dap.trace.child.values import _short
from neural_dap.trace.child.whatif import Edits


def _parse_call_args(text: str, namespace: dict, literal_only: bool = False) -> tuple[list, dict]:
    """Turn `"[3, 1], key=None"` into (args, kwargs).

    Literals are parsed with ast.literal_eval. Anything else (e.g. `set()`) is evaluated in the
    program's own namespace, because this text comes from the user who asked to run the program;
    with `literal_only` (text built from a model's prediction) anything else is refused.
    """
    tree = ast.parse(f"_entry_({text})", mode="eval")
    call = tree.body
    assert isinstance(call, ast.Call)

    def value(node):
        try:
            return ast.literal_eval(node)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            if literal_only:
                raise ValueError(f"the argument {ast.unparse(node)[:80]!r} is not a Python literal") from None
            expr = ast.Expression(node)
            ast.fix_missing_locations(expr)
            return eval(compile(expr, "<entry args>", "eval"), namespace)

    args: list = []
    for node in call.args:
        if isinstance(node, ast.Starred):
            args.extend(value(node.value))
        else:
            args.append(value(node))
    kwargs: dict = {}
    for kw in call.keywords:
        if kw.arg is None:
            kwargs.update(value(kw.value))
        else:
            kwargs[kw.arg] = value(kw.value)
    return args, kwargs


def _limit_processes(allowed: int) -> None:
    """At most `allowed` new processes: RLIMIT_NPROC where the kernel applies it (not for root), and a
    count kept by every way the standard library starts one. (Whatever the debuggee starts is killed
    with its process group when the recording ends.)"""
    try:
        import resource

        if os.geteuid() != 0:
            running = (
                len(os.listdir("/proc")) if os.path.isdir("/proc") else 0
            )  # a generous count of the user's processes
            _soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
            cap = running + allowed
            if hard != resource.RLIM_INFINITY:
                cap = min(cap, hard)
            resource.setrlimit(resource.RLIMIT_NPROC, (cap, hard))
    except (ImportError, ValueError, OSError):
        pass
    left = [allowed]

    def counted(original):
        def start(*args, **kwargs):
            if left[0] <= 0:
                raise BlockingIOError(11, f"neural-dap: the debuggee may start at most {allowed} processes")
            left[0] -= 1
            return original(*args, **kwargs)

        return like(original, start)

    for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
        if hasattr(os, name):
            setattr(os, name, counted(getattr(os, name)))
    try:
        import _posixsubprocess  # what subprocess.Popen starts processes with

        _posixsubprocess.fork_exec = counted(_posixsubprocess.fork_exec)
    except (ImportError, AttributeError):
        pass


def _find_module(name: str, rest: list[str], argv: list, main_module: types.ModuleType):
    """Find `name` as `python -m name` does (runpy's _run_module_as_main: the working folder first
    on sys.path, a package runs its __main__, argv[0] is the module's file) and prepare `__main__`'s
    globals; returns (code, file) or what `python -m` would have said. Packages above the module are
    imported here, untraced, as runpy imports them before the module runs."""
    import runpy

    sys.path[:] = [os.getcwd(), *rest]
    sys.argv = ["-m", *argv]  # what the program sees while runpy looks (as under `python -m`)
    try:
        _name, spec, code = runpy._get_module_details(name)  # type: ignore[attr-defined]
    except ImportError as exc:
        return f"{sys.executable}: {exc}"
    except Exception as exc:  # a package above the module raised while it was imported
        return f"{sys.executable}: error while finding module specification for {name!r} ({type(exc).__name__}: {exc})"
    path = spec.origin
    sys.argv[0] = path
    main_module.__dict__.update(
        {
            "__name__": "__main__",
            "__file__": path,
            "__cached__": spec.cached,
            "__doc__": None,
            "__loader__": spec.loader,
            "__package__": spec.parent,
            "__spec__": spec,
            "__builtins__": builtins,
        }
    )
    return code, path


def main() -> None:
    die_with_parent()  # the adapter's thread that started us: if the adapter dies, so do we
    cfg = json.loads(sys.stdin.buffer.read())
    if "owner_pid" in cfg and os.getppid() != int(cfg["owner_pid"]):
        os._exit(0)  # the adapter died before we asked to die with it
    if cfg.get("lifeline_fd") is not None:
        os.set_inheritable(int(cfg["lifeline_fd"]), False)  # for checkpoints, not for what the program runs
    for name, value in (cfg.get("environ") or {}).items():  # ours to start with; the program's from now on
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    # the debuggee reads its `stdin` file (a launch's "stdin"), else EOF; never our configuration
    # (sys.stdin stays the object it was)
    try:  # (a terminal console's FIFO: opened without waiting for a writer; reads wait, as a pipe's do)
        given = os.open(cfg.get("stdin_path") or os.devnull, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(given, True)
    except OSError:
        given = os.open(os.devnull, os.O_RDONLY)
    os.dup2(given, 0)
    os.close(given)
    limits = Limits(cfg)
    if limits.memory_mb:
        try:
            import resource

            cap = limits.memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        except (ImportError, ValueError, OSError):
            pass
    _limit_processes(limits.max_processes)
    import faulthandler

    # if the interpreter dies (a segfault in C code), its stack goes to stderr for the parent
    faulthandler.enable(file=sys.__stderr__ or 2)
    record_here(cfg, limits, int(cfg["events_fd"]))


def record_here(
    cfg: dict, limits: Limits, events_fd: int, exit_code=lambda outcome: 0, finished=lambda sent: None
) -> None:
    """Run the program in this process under an engine, its events written to `events_fd`; then
    end the process with `exit_code(outcome)` (the recording child: 0; a child process the program
    started, which records itself: the program's own code), after `finished(events sent)`."""
    channel = Channel(events_fd, limits)
    journal_fd = _open_journal(cfg, channel)
    if cfg.get("descendant"):  # a child process recording itself runs on past its recording's limits
        channel.exit = lambda _code: discard_past_the_limit(channel.events)  # type: ignore[assignment, return-value]
        keep_events_when_terminated(channel, finished)
    rec = Recorder(cfg, channel)
    # every thread (the parent asked after a recording of one thread met a second): Python engines
    threads = ThreadTable(rec.events.append) if cfg.get("threads") else None
    engine_name, engine = choose_engine(
        cfg.get("engine", "auto"), rec, skeleton=cfg.get("mode") == "skeleton", threads=threads
    )
    current = [engine]  # the engine recording now (a second thread switches it: child/switch.py)
    start = engine.start

    def stop() -> None:
        current[0].stop()

    real_exit = os._exit
    skeleton: Skeleton | None = None

    def finish(outcome: str, message: str) -> None:
        with plumbing():
            _flush_journal()
            channel.finish(outcome, message)
        real_exit(0)

    if cfg.get("mode") == "skeleton":
        skeleton = Skeleton(cfg, channel, engine, rec.events, finish)
        skeleton.journal_fd = journal_fd
        skeleton.is_user = rec.is_user  # type: ignore[method-assign]  # a live stop shows the traced frames
        skeleton.encode_value = rec.encode_object  # type: ignore[method-assign]  # a watch encodes as locals are
        if cfg.get("what_if"):  # a what-if branch: values to set on the way (child/whatif.py)
            skeleton.edits = Edits(cfg["what_if"], rec, cfg.get("sandbox"))
        skeleton.start()
        rec.count = engine.count
        if cfg.get("command_fd") is not None and not hasattr(engine, "live"):
            channel.events.append(["nolive"])  # (the Python engines: recorded to the end, then debugged)
        elif cfg.get("command_fd") is not None:
            # a live recording: the adapter debugs the program while it runs (child/frontier.py);
            # no wall-time limit while someone is at it
            from neural_dap.trace.child.frontier import Frontier
            from neural_dap.trace.child.returned import ForeignReturns

            os.set_inheritable(int(cfg["command_fd"]), False)
            skeleton.frontier = Frontier(int(cfg["command_fd"]), engine, skeleton, channel)
            skeleton.frontier.returns = ForeignReturns(engine, rec.is_user, rec.encode_object, rec.user_cache)
            skeleton.frontier.recorder = rec
            skeleton.replay_seconds = 3600.0

    def begin_journal() -> None:
        """The program's code starts here (its folder, its module found, its file read): what it
        receives from the world is journaled from now on, so a replay reads the same and touches
        nothing. A what-if branch reads the first run's journal up to its edit; a full capture is
        never replayed; the recorder's reprs run in the sandbox either way."""
        if JOURNAL is None:
            return
        if cfg.get("journal_replay") and journal_fd is not None:
            JOURNAL.replay(journal_fd)
        elif journal_fd is not None:
            JOURNAL.record(journal_fd)
        elif cfg.get("sandbox"):
            JOURNAL.sandbox(cfg["sandbox"])
        else:
            JOURNAL.live()

    def before_start() -> None:
        if skeleton is not None:
            # the first checkpoint, before tracing starts: its workers start tracing as they go on,
            # so the recorder's own work in them (a socket, a JSON request) is never an event, even
            # when the standard library is traced (justMyCode false)
            skeleton.begin()
            if skeleton.frontier is not None and skeleton.worker is None:
                with plumbing():
                    skeleton.frontier.start()

    forked = [False]  # this process is a copy the debuggee forked: not recorded

    def exit_after_flush(code: int = 0) -> None:
        if forked[0]:
            real_exit(code)
        _leave_the_program()
        stop()
        ended = ("exited", f"the program called os._exit({code})", code)
        if skeleton is not None:
            engine.flush()
            skeleton.program_ended(ended)
        channel.finish(*ended)
        finished(channel.sent)
        die_if_signalled(channel)
        real_exit(code)

    def before_exec(how: str, path) -> None:
        """The program replaces itself (os.exec*): the recording ends here, with what it has."""
        previous = _leave_the_program()
        stop()
        ended = ("exited", f"the program replaced itself with os.{how}({os.fsdecode(path)!r}, ...)", None)
        if skeleton is not None:
            engine.flush()
            skeleton.program_ended(ended)  # (a worker's replay ends here: it must not exec)
        channel.finish(*ended)
        _close(channel.fd)  # the new program must not hold the event pipe open
        if JOURNAL is not None:
            JOURNAL.off()  # (the new program is not recorded; if exec fails, the program goes on unrecorded)
            JOURNAL.enter(previous)

    def after_fork_in_child() -> None:
        if OWN_FORK[0]:
            return  # a checkpoint or a worker: ours
        forked[0] = True
        _stop_in_forked_child(stop, channel, cfg)
        os._exit = real_exit
        if cfg.get("children") and (skeleton is None or skeleton.worker is None):
            follow_forked_workers({**_children_spec(cfg, rec), "folder": cfg["children"]}, rec.program)
        if get_ident() == traced_thread and not cfg.get("descendant"):
            # (a fork from another thread would die when that thread ends; a child process's forks
            # outlive it as they would without us: the recording's process group still ends them)
            die_with_parent()

    def end_here(outcome: str, message: str) -> None:
        """In the main thread, between two of the program's bytecodes: stop tracing, hand over the
        records still buffered, end. A program that waits (a server, a sleep loop) keeps what it
        recorded up to the wall-time limit or to the user's pause."""
        _leave_the_program()
        stop()
        if skeleton is not None:
            engine.flush()
        channel.finish(outcome, message)
        real_exit(0)

    switch = ThreadSwitch(get_ident(), END_SIGNAL)
    # every thread recorded as skeletons from the second on (their values a replay's under the
    # recorded schedule; in C), live or not
    skeletons = bool(cfg.get("thread_skeletons")) and skeleton is not None

    def perform_switch():
        """In the main thread, between bytecodes: a second thread runs the program's code, so every
        thread is recorded from here on, in full: by the C tracer of every thread where the
        recording's engine is the C tracer, else by a Python engine that takes over the traced
        frames; the events before stay as they were recorded (a skeleton's replayable from its
        checkpoints, none taken after this). Returns the new engine's `take`."""
        with plumbing():
            old = current[0]
            first = old.count() if skeleton is not None else -1
            table = ThreadTable(rec.events.append)
            if skeletons and skeleton is not None:
                skeleton.switched = True  # no checkpoint after this: a fork copies one thread
                old.flush()
                skeleton.records_from(old.count())
                # (a checkpoint's replay follows the recording's schedule, which the adapter sends it)
                worker = skeleton.worker
                schedule = worker["schedule"] if worker is not None else cfg.get("thread_schedule")
                locks = worker["locks"] if worker is not None else cfg.get("thread_locks")
                take = _switch_to_skeletons(cfg, rec, old, table, switch, channel, first, current, schedule, locks)
                skeleton.following = current[0].following  # (a worker says how far its replay held)
                if skeleton.frontier is not None:
                    skeleton.frontier.threaded(current[0])  # a live recording stops every thread from now on
                return take
            if skeleton is not None:
                old.flush()
                skeleton.switched = True  # no checkpoint after this: a fork copies one thread
                skeleton.collector.release()  # (nothing after it is replayed: CPython collects again)
                rec.count = None  # output is an event among the others from now on
            try:
                in_c = every_thread_in_c(rec, old, table)
            except Exception:  # (the C group could not be made: the Python engines go on instead)
                in_c = None
            if in_c is not None:  # the C tracer goes on, in full, with a tracer per thread
                if JOURNAL is not None:
                    JOURNAL.flush()
                    JOURNAL.live()  # nothing after this is replayed: the journal ends here
                channel.events.append(["switch", first])
                in_c.adopt()
                current[0] = in_c
                if skeleton is not None and skeleton.frontier is not None:
                    skeleton.frontier.threaded(in_c)  # a live recording stops every thread from now on
                return in_c.take
            entries = old.entries() if hasattr(old, "entries") else []
            next_invocation = old.next_invocation() if hasattr(old, "next_invocation") else rec.next_invocation
            old.stop()
            if JOURNAL is not None:
                JOURNAL.flush()
                JOURNAL.live()  # nothing after this is replayed: the journal ends here
            name, new = choose_engine("auto", rec, threads=ThreadTable(rec.events.append))
            channel.events.append(["switch", first])
            # (a server runs on under it, to the launch's event limit: the adapter keeps the latest
            # events within a full recording's memory, trace/rolling.py)
            new.adopt(entries, next_invocation)
            current[0] = new
            if name == "monitoring":
                # sys.monitoring sees every thread's calls by itself: threads started from now on
                # need no trace function to bring them to the engine (each thread a server starts
                # turning legacy tracing on and off re-instruments every code object: a tenth of a
                # threaded server's time); threads already started still come through `take`
                threading.settrace(None)  # type: ignore[arg-type]
            return new.take

    switch.perform = perform_switch
    main_tracer = getattr(engine, "tracer", engine)  # (the C tracer: CMonitoring's, or the 3.11 one itself)
    if hasattr(main_tracer, "stop_reason"):

        def quiet(on: bool) -> None:
            """The C tracer of the main thread sees nothing meanwhile (it goes on after a switch)."""
            if on:
                main_tracer.stop()
            else:
                main_tracer.start()

        switch.quiet = quiet
    _arm_end_signal(end_here, channel, get_ident(), switch, lambda: skeleton is not None and skeleton.busy())
    traced_thread = get_ident()

    def end_for_threads(outcome: str, message: str) -> None:
        _flush_journal()
        if channel.end_in_main is None or not channel.end_in_main(outcome, message):
            channel.finish(outcome, message)
            real_exit(0)

    os._exit = like(real_exit, exit_after_flush)  # type: ignore[assignment]
    _wrap_exec(before_exec, forked)
    register_at_fork_of_ours(after_in_child=after_fork_in_child)
    hide_our_forks()  # (from here on: the program's own registrations)
    if cfg.get("children"):  # subProcess: the Python programs it starts record themselves (child sessions)
        from neural_dap.trace.child.descendants import follow_python_children

        follow_python_children(
            cfg["children"],
            lambda: _children_spec(cfg, rec),
            cfg.get("own_path") or "",
            lambda: skeleton is None or skeleton.worker is None,
        )
    channel.events.append(["engine", engine_name, sys.version.split()[0]])
    channel.start()
    # after our own threads have started: threading.settrace reaches the threads started from now on,
    # and the recorder's run without a trace function (with one in the flusher, a fork of the program
    # sometimes left its copy blocked on a lock, never reaching die_with_parent)
    stop_watching = (lambda: None) if threads is not None else watch_for_threads(switch, end_for_threads)
    uncaught: list[BaseException] = []
    outcome = _run(cfg, rec, start, stop, channel, before_start, begin_journal, switch, uncaught.append)
    stop_watching()  # (a thread an atexit function starts is after the recording's end)
    if skeleton is None or skeleton.worker is None:  # (a replay's worker ends at the program's end)
        # still as the program: what it prints as it dies and what its atexit functions do is
        # recorded, or refused in a sandbox
        if not forked[0]:  # (a forked copy says how it ended in its own words: _end_forked_child)
            for exc in uncaught:
                _print_traceback(exc)
        _shut_down_as_the_interpreter()
    _leave_the_program()  # what follows is the recorder's
    _report_refusals(channel)
    if forked[0]:  # the debuggee's forked copy ran to its end, as a plain run's would
        _end_forked_child(outcome, real_exit)
    if skeleton is not None:
        engine.flush()
        skeleton.program_ended(outcome)  # (a worker sends what it captured and ends here)
    channel.finish(*outcome)
    finished(channel.sent)
    die_if_signalled(channel)
    real_exit(exit_code(outcome))


# seconds: the interpreter's own hand-over of the GIL while threads are skeletons. Longer keeps more
# runs at events; it is also how long a thread running code with no events (a library's, with
# justMyCode) can keep the others waiting (a review measured 2.2 s at 2.0, 0.18 s in full capture)
LONG_SWITCH_INTERVAL = 0.25
TIMESLICE = 0.005  # seconds a thread runs before the recording hands the GIL over at an event (CPython's 5 ms)


def _switch_to_skeletons(
    cfg: dict,
    rec: Recorder,
    old,
    table: ThreadTable,
    switch: ThreadSwitch,
    channel: Channel,
    first: int,
    current: list,
    schedule: str | None,
    locks: str | None,
):
    """perform_switch where every thread is recorded as skeletons: the main thread's C tracer goes on
    in skeleton mode with every other thread's records in its stream (engines.CThreads), each thread
    numbered as it starts; a run given the recording's schedule (`thread_schedule`) follows it. No
    checkpoint is taken after the switch (a fork copies one thread), the program's collections stay
    the recorder's (at fixed events, as a replay makes them) and output keeps its event index; the
    journal goes on recording, each thread's calls as that thread's (a replay answers each thread
    from its own: trace/_journal.c).
    The program's locks are taken through the group (`CThreads.gate_locks`): a recording says who
    took each, a replay given that (`locks`) takes them in the same order."""
    in_c = every_thread_in_c(rec, old, table, skeletons=True)
    if in_c is None:
        raise RuntimeError("every thread as skeletons needs the C tracer")
    # Runs end at events or where a thread blocks, never inside a line (a replay ends them at
    # events): the interpreter's own hand-over, at any instruction every 5 ms, is made rare, and
    # the recording hands over at an event instead, as often
    sys.setswitchinterval(float(cfg.get("switch_interval", LONG_SWITCH_INTERVAL)))
    in_c.gate_locks()
    if locks:
        with open(locks, "rb") as fh:
            try:
                in_c.follow_locks(fh.read())
            except ValueError:  # (not what a recording says: the replay goes free, its divergence is found)
                pass
    if schedule:
        with open(schedule, "rb") as fh:
            in_c.follow(fh.read(), float(cfg.get("schedule_patience", 5.0)))
    else:
        in_c.group.timeslice(float(cfg.get("timeslice", TIMESLICE)))
    channel.events.append(["switch", first, "skeletons"])
    if JOURNAL is not None:  # (each thread's calls journaled, and replayed, as the main thread's)
        table.started = JOURNAL.thread
    switch.numbered = table.numbered
    in_c.adopt()
    current[0] = in_c
    return in_c.take


def _shut_down(stop, cfg: dict, switch: ThreadSwitch) -> None:
    """As the interpreter does when the main module ends: join the program's threads (and run what
    `threading` registered to run then). A skeleton recording of one thread: what runs then is the
    threading module's own bookkeeping, which differs in a fork of the program (a checkpoint's
    replay), so it is not traced."""
    if cfg.get("mode") == "skeleton" and not switch.switched:
        stop()
        wait_for_threads()
        return
    wait_for_threads()
    stop()


def _open_journal(cfg: dict, channel: Channel) -> int | None:
    """The journal file of a recording that will be replayed (skeleton mode), or None. Without the
    journal library a skeleton recording cannot be made: it ends here, before the program runs, and
    the adapter records in full instead."""
    path = cfg.get("journal_path")
    replay = cfg.get("journal_replay")  # a what-if branch: the first run's journal, read up to the edit
    if not (path or replay) or cfg.get("mode") != "skeleton":
        return None
    if JOURNAL is None:
        channel.finish("error", NO_JOURNAL)
        os._exit(0)
    if replay:
        fd = os.open(str(replay), os.O_RDONLY | os.O_CLOEXEC)
    else:
        fd = os.open(str(path), os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    high = fcntl_dupfd(fd, 900)  # out of the way of the program's own numbers
    if high != fd:
        os.close(fd)
    return high


NO_JOURNAL = "the journal could not be loaded into the recording process"


def fcntl_dupfd(fd: int, at_least: int) -> int:
    try:
        import fcntl

        return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, at_least)
    except (ImportError, OSError):
        return fd


def _flush_journal() -> None:
    if JOURNAL is not None:
        with plumbing():
            JOURNAL.flush()


def _report_refusals(channel: Channel) -> None:
    """What the sandbox refused the program (a sandboxed run) or the reprs of its values."""
    if JOURNAL is None:
        return
    count, first = JOURNAL.refusals()
    if count:
        channel.events.append(["refused", count, first])


def _leave_the_program() -> int:
    """The program's part of this thread is over (it ended, exited, is replaced, or the recording
    ends here): everything after is the recorder's own. Returns the context it replaces."""
    if JOURNAL is None:
        return 0
    previous = JOURNAL.enter(PLUMBING)
    JOURNAL.flush()
    return previous


def _print_traceback(exc: BaseException) -> None:
    """What the interpreter prints when the program dies of `exc`, on the program's stderr (a
    parent may read it; the user reads it in the debug console): the traceback from the program's
    own frames, not the recorder's that run it."""
    import traceback

    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:
        tb = tb.tb_next
    try:
        traceback.print_exception(type(exc), exc, tb)
    except Exception:  # (a broken stderr, an exception whose str raises: as the interpreter, go on)
        pass


def _shut_down_as_the_interpreter() -> None:
    """The program ends as the interpreter would end it, before the recording's end is sent and its
    exit code given: its `atexit` functions run (a log written at exit, multiprocessing's join of
    the processes it started), the files it left open get what it wrote, its streams are flushed.
    Untraced, as in debugpy (which stops in none of them). The recording child ends with
    os._exit, which would skip all of this: a user's file would miss its last lines."""
    import atexit

    try:
        atexit._run_exitfuncs()
    except BaseException:  # (the interpreter prints such an error and goes on)
        pass
    # the interpreter's end finalizes every object, so a file the program left open gets what it
    # wrote; the recorder still holds the program's objects (the values it last saw), so the files
    # among them are flushed here instead
    import _io
    import gc

    # (the C base classes of io's BufferedIOBase and TextIOBase, which every buffered or text file
    # derives from: an isinstance of io's ABCs themselves took 6 ms over a start-up's objects)
    buffered = (_io._BufferedIOBase, _io._TextIOBase)
    for obj in gc.get_objects():
        if isinstance(obj, buffered):
            try:
                if not obj.closed and obj.writable():
                    obj.flush()
            except Exception:
                pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


_SPEC_KEYS = (
    *("engine", "trace_all", "trace_libraries", "comprehensions", "as_debugpy", "children", "own_path"),
    *("max_events", "max_repr", "max_output", "max_children", "repr_seconds"),
)


# a child records every state (a full recording), whose limit is lower than a skeleton's
# (world/recorded.py SESSION_LIMITS["full"]): a child never writes more than that to its file
CHILD_MAX_EVENTS = 2_000_000


def _children_spec(cfg: dict, rec: Recorder) -> dict:
    """How a child process records itself: as this recording does, with the same user's code."""
    spec = {**{k: cfg[k] for k in _SPEC_KEYS if k in cfg}, "roots": rec.roots}
    spec["max_events"] = min(int(spec.get("max_events", CHILD_MAX_EVENTS)), CHILD_MAX_EVENTS)
    return spec


# What the adapter sends to end a recording now (a `pause` while the program is recorded), and
# what the flusher thread sends the main thread at the wall-time limit: a real-time signal, which
# programs leave alone, handled in the main thread between bytecodes (a blocking call is interrupted).
END_SIGNAL = signal.SIGRTMIN + 3 if hasattr(signal, "SIGRTMIN") else None


def _arm_end_signal(end_here, channel: Channel, main_thread: int, switch: ThreadSwitch, busy) -> None:
    """The main thread's real-time signal: end the recording here (a pause, a limit), or switch to
    recording every thread (child/switch.py), whichever was asked."""
    if END_SIGNAL is None:
        return
    reason = [("paused", "the recording was paused: it ends here")]

    def on_signal(_signum, _frame) -> None:
        if channel.lock.locked() or busy():
            # the signal may have come while this thread writes records (to the adapter's files and
            # the pipe: the lock is held below this handler) or runs the recorder's hook: ending or
            # switching here would
            # wait on that lock for ever, or cut the hook's work in two; ask again in a moment
            channel.soon(lambda: _resend(main_thread))  # (from the flusher: no thread is started for it)
            return
        if switch.due():
            switch.run()
            return
        if switch.late_poke():
            return
        end_here(*reason[0])

    def end_in_main(outcome: str, message: str) -> bool:
        reason[0] = (outcome, message)
        try:
            signal.pthread_kill(main_thread, END_SIGNAL)
        except (OSError, ValueError):
            return False
        channel.done.wait(1.0)  # the main thread ends the process; if it is stuck in C code, we do
        return False

    try:
        signal.signal(END_SIGNAL, on_signal)
    except (OSError, ValueError):
        return
    channel.end_in_main = end_in_main  # type: ignore[assignment]


def _resend(thread: int) -> None:
    try:
        signal.pthread_kill(thread, END_SIGNAL)  # type: ignore[arg-type]
    except (OSError, ValueError):
        pass


def _stop_in_forked_child(stop, channel: Channel, cfg: dict) -> None:
    """A process the debuggee forked (os.fork, multiprocessing's fork and forkserver children) is not
    the one being debugged: tracing stops, it never writes to the event pipe nor touches the
    checkpoints, and its output goes to the file descriptors (the adapter collects it)."""
    try:
        stop()
    except Exception:
        pass
    channel.closed = True
    channel.done.set()
    _close(channel.fd)
    if cfg.get("lifeline_fd") is not None:
        _close(int(cfg["lifeline_fd"]))
    set_output_mode(PASS)


def _end_forked_child(outcome: tuple, real_exit) -> None:
    kind, message, code = outcome[0], outcome[1], outcome[2]
    if kind in ("raised", "memory", "error"):
        try:
            sys.stderr.write(f"{message}\n")
        except Exception:
            pass
    real_exit(code if isinstance(code, int) else (0 if kind == "finished" else 1))


def _wrap_exec(before_exec, forked: list) -> None:
    """os.execv / os.execve (the other os.exec* functions call these two): end the recording first
    when the exec will happen (a failed attempt, as os.execvp makes along PATH, changes nothing)."""
    for name in ("execv", "execve"):
        original = getattr(os, name, None)
        if original is None:
            continue

        def execute(path, *args, _original=original, _name=name, **kwargs):
            if not forked[0] and _will_exec(path):
                before_exec(_name, path)
            return _original(path, *args, **kwargs)

        execute.__name__ = name
        setattr(os, name, like(original, execute))


def _will_exec(path) -> bool:
    if isinstance(path, int):
        return True  # execve on a file descriptor
    try:
        return os.path.isfile(path) and os.access(path, os.X_OK)
    except (TypeError, ValueError):
        return False


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass


# The line a recording of one function writes to the program's stderr when the module's top level
# raised first (the MCP server reads it back as `top_level`).
TOP_LEVEL_RAISED = "neural-dap: the top level raised "


def _top_level_raised(
    exc: BaseException, path: str, entry: str, namespace: dict, code_names: tuple[str, ...]
) -> tuple | None:
    """The top level of the module raised while it ran untraced before the entry function (a script
    that asserts, or calls its buggy function, at its end). With the function defined by then, the
    top level stops there: its traceback and one line saying so go to stderr (recorded output, as the
    interpreter would print them), and the function is called in the namespace it left (None). Without
    it, the outcome says where the top level raised and how to make the function recordable."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    top = next((k for k, f in enumerate(frames) if f.filename == path and f.name == "<module>"), None)
    where = f" at line {frames[top].lineno}" if top is not None and frames[top].lineno else ""
    text = f"{type(exc).__name__}: {_short(exc)}" if not isinstance(exc, SystemExit) else f"sys.exit({exc.code!r})"
    name = os.path.basename(path)
    if not callable(namespace.get(entry)) and entry not in code_names:
        return ("error", f"{name} defines no function {entry!r}", None, None)
    if not callable(namespace.get(entry)):
        return (
            "error",
            f"the top level of {name} raised {text}{where} before it defined {entry}; guard the top level "
            f'with `if __name__ == "__main__":` so that {entry} can be recorded alone',
            1,
            None,
        )
    try:  # (sys.stderr: the recorded program's stderr) the traceback from the module's frame on
        shown = frames[top or 0 :][-8:]
        sys.stderr.write("Traceback (most recent call last):\n" + "".join(traceback.format_list(shown)))
        sys.stderr.write("".join(traceback.format_exception_only(type(exc), exc)))
        sys.stderr.write(f"{TOP_LEVEL_RAISED}{text}{where}; stopped there, {entry} is called in what it defined\n")
    except Exception:
        pass
    return None


def _run(
    cfg: dict,
    rec: Recorder,
    start,
    stop,
    channel: Channel,
    before_start=lambda: None,
    begin=lambda: None,
    switch: ThreadSwitch | None = None,
    died: Callable[[BaseException], object] = lambda exc: None,
) -> tuple:
    """Run the program; its outcome. `died`: told the exception the program dies of."""
    if switch is None:
        switch = ThreadSwitch(get_ident(), None)
    main_module = types.ModuleType("__main__")
    begin()
    ours = cfg.get("own_path")
    rest = [p for p in sys.path[1:] if p != ours]
    if JOURNAL is not None:  # (the recorder's imports and reprs leave the program as it was)
        recorder_imports.install(rest, JOURNAL.in_plumbing)
        quiet_thread_reprs(JOURNAL.in_sandbox)
    module = cfg.get("module")
    if module:
        if cfg.get("cwd"):
            try:
                os.chdir(cfg["cwd"])
            except OSError as exc:
                return ("error", f"cannot change directory to {cfg['cwd']}: {exc}", None, None)
        found = _find_module(module, rest, cfg.get("argv", []), main_module)
        if isinstance(found, str):
            return ("error", found, 1, None)
        code, path = found
        with plumbing():
            rec.set_main(path, [os.getcwd()])
        channel.main = path
    else:
        path = rec.program
        source = cfg.get("source")
        try:
            if source is None:
                with open(path, "rb") as fh:
                    source = fh.read()
            code = compile(source, path, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError) as exc:
            return ("error", f"cannot compile {path}: {type(exc).__name__}: {exc}", None, None)
        main_module.__dict__.update({"__file__": path, "__builtins__": builtins, "__cached__": None})
        sys.argv = [cfg.get("argv0") or path, *cfg.get("argv", [])]  # (a child: the path as it was given)
        # as `python program.py` would: the program's folder first, not ours
        sys.path[:] = [os.path.dirname(path), *rest]
        if cfg.get("dash_c"):  # `python -c CODE args`, as that runs: no file, the working folder first
            del main_module.__dict__["__file__"]
            sys.argv[0], sys.path[0] = "-c", ""
        if cfg.get("cwd"):
            try:
                os.chdir(cfg["cwd"])
            except OSError as exc:
                return ("error", f"cannot change directory to {cfg['cwd']}: {exc}", None, None)
    sys.modules["__main__"] = main_module
    stdout, stderr = sys.stdout, sys.stderr
    # sys.__stdout__ too: `sys.stdout = sys.__stdout__` (undoing a redirection) still records
    sys.stdout = sys.__stdout__ = Capture("o", rec, stdout, 1)  # type: ignore[misc]
    sys.stderr = sys.__stderr__ = Capture("e", rec, stderr, 2)  # type: ignore[misc]
    if cfg.get("descendant"):
        set_output_mode(TEE)
    entry = cfg.get("entry")
    try:
        if entry:
            try:
                exec(code, main_module.__dict__)  # the definitions run untraced
            except (Exception, SystemExit) as exc:  # a script that fails at its end: the one being debugged
                failed = _top_level_raised(exc, path, entry, main_module.__dict__, code.co_names)
                if failed is not None:
                    return failed
            func = main_module.__dict__.get(entry)
            if not callable(func):
                return ("error", f"{path} defines no function {entry!r}", None, None)
            try:
                args, kwargs = _parse_call_args(
                    cfg.get("entry_args") or "", main_module.__dict__, bool(cfg.get("literal_args"))
                )
            except (ValueError, SyntaxError) as exc:
                return ("error", f"cannot call {entry}: {exc}", None, None)
            before_start()
            start()
            try:
                result = func(*args, **kwargs)
            finally:
                _shut_down(stop, cfg, switch)
            with sandboxed():
                return ("finished", "", 0, rec.reprs.repr(result))
        before_start()
        start()
        try:
            exec(code, main_module.__dict__)
        finally:
            _shut_down(stop, cfg, switch)
        return ("finished", "", 0, None)
    except SystemExit as exc:
        code_ = exc.code
        if code_ is None or isinstance(code_, int):
            return ("exited", f"the program called sys.exit({code_!r})", code_ or 0, None)
        print(code_, file=sys.stderr)
        return ("exited", f"the program called sys.exit({code_!r})", 1, None)
    except BaseException as exc:  # the debuggee's uncaught exception is an outcome, not our crash
        kind = "memory" if isinstance(exc, MemoryError) else "raised"
        if not entry:  # (a function called by itself has no plain run to print like)
            died(exc)
        with sandboxed():
            return (kind, f"{type(exc).__name__}: {_short(exc)}", 1, rec.reprs.repr(exc))
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__ = stdout, stderr  # type: ignore[misc, assignment]
