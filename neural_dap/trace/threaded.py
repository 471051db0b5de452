"""A skeleton recording in which a second thread ran the program's code, made into one full recording.

From the event the second thread first called the user's code (K), the recording child records
every thread in full, in the same process (child/switch.py): nothing runs twice. The events before K
are the skeleton's: their states are rebuilt here from its checkpoints, a window at a time, and put
in front of what follows, so the session gets one full recording of every thread (its replays are
over: a threaded run has no fork to replay from). At most `PREFIX_LIMIT` events before K are kept;
a longer prefix starts where they begin, and the recording says so. Where the events since the
switch passed their budget (trace/rolling.py), the recording starts at the cut instead.
"""

from __future__ import annotations

from collections.abc import Iterable

from neural_dap.trace.collector_pause import paused_collector
from neural_dap.trace.eventlog import EventLog
from neural_dap.trace.program import Program
from neural_dap.trace.recorder import Recording
from neural_dap.trace.skeleton import DivergenceError, SkeletonRecording
from neural_dap.trace.tree import Facts

PREFIX_LIMIT = 1_000_000  # events before the switch kept (a full recording's memory)
WINDOW = 50_000  # events rebuilt by one replay
_STATES = frozenset(("c", "l", "r", "x"))


def join(skeleton: SkeletonRecording) -> tuple[Recording, int]:
    """The whole run as one full recording, and the index (in it) of the first event after the
    switch. Raises DivergenceError where a replay of the prefix does not follow the recording."""
    joiner = Joiner(skeleton)
    return joiner.recording(), joiner.switched_index


class Joiner:
    """The joined recording of a program that still runs (a live session, world/live.py), made again
    at each of its stops: the prefix is rebuilt once, and each time only the events that came
    since the last are fed (and their states built), unless the oldest were dropped meanwhile
    (trace/rolling.py: then it starts again at the new cut)."""

    def __init__(self, skeleton: SkeletonRecording) -> None:
        self.skeleton = skeleton
        self._begin()

    def _begin(self) -> None:
        skeleton = self.skeleton
        switched = skeleton.log.switched_at
        assert switched is not None
        threaded = skeleton.log.threaded
        self.dropped = threaded.dropped
        # events since the switch dropped past the budget (trace/rolling.py): the recording starts at
        # the cut, its frames as snapshots there, and nothing of the prefix is rebuilt
        first = switched if self.dropped else max(0, switched - PREFIX_LIMIT)
        self.first = first
        self.switched_index = switched - first
        program = skeleton.program or Program(skeleton.main_path)
        log = self.log = EventLog(program, skeleton.main_path)
        log.codes.update(skeleton.log.codes)
        log.sources.update(skeleton.sources)
        log.source_lines.update(skeleton.source_lines)
        # in the order written, by event: a stable sort on the event alone (print() writes its text
        # and its newline at one event: sorting on the text too put the newline first)
        by_event = sorted(skeleton.log.outputs, key=lambda output: output[0])
        outputs = [(count, stream, text) for count, stream, text in by_event if first <= count]
        if self.dropped:  # (the output before the switch comes first, with the cut's)
            outputs = [(first, stream, text) for _, stream, text in by_event]
        feeder = self.feeder = _Feeder(log, outputs, first)
        for a in range(first, switched, WINDOW):
            b = min(switched, a + WINDOW) - 1
            window = skeleton._materialise(_checkpoint_before(skeleton, a), a, b)  # (replayed, checked)
            if skeleton.diverged_at is not None and skeleton.diverged_at <= b:
                raise DivergenceError(skeleton.divergence_message())
            feeder.feed(window.raw_events)
        if self.dropped:
            feeder.flush_outputs(first)  # (before the cut's own: it came earlier)
        self.fed = 0  # of the events since the switch (after the cut's snapshots)
        self._feed()

    def _feed(self) -> None:
        # (a copy: the recorder's collector may append while this runs, a live program's thread
        # finishing an event it had begun as another stopped)
        threaded = self.skeleton.log.threaded
        events = list(threaded) if not self.fed else threaded.events[self.fed - len(threaded.base) :]
        # the codes first run since (their sources read as the log reads them)
        known = self.log.codes
        self.log.feed([["k", cid, *code] for cid, code in list(self.skeleton.log.codes.items()) if cid not in known])
        with paused_collector():  # (up to 2M events of every thread indexed: see collector_pause.py)
            self.feeder.feed(events)
        self.fed += len(events)
        self.feeder.flush_outputs(self.first + len(self.log.kinds) + 1)

    def update(self) -> bool:
        """Take in the events that came since (a later stop of the same program). True where the
        recording starts again (the oldest were dropped meanwhile: it starts at the new cut)."""
        if self.skeleton.log.threaded.dropped != self.dropped:
            self._begin()
            return True
        self._feed()
        return False

    @property
    def base(self) -> int:
        """The index, in the whole run, of the joined recording's event 0."""
        switched = self.skeleton.log.switched_at
        assert switched is not None
        return switched + self.dropped if self.dropped else self.first

    def recording(self) -> Recording:
        skeleton, log = self.skeleton, self.log
        log.engine, log.python = skeleton.log.engine, skeleton.log.python
        log.refused = skeleton.log.refused
        program = skeleton.program or Program(skeleton.main_path)
        full = Recording(program, log, skeleton.outcome, skeleton.fd_stdout, skeleton.fd_stderr, skeleton.seconds)
        full.module_file = skeleton.main_path if program.module else None
        return full

    def facts(self) -> Facts:
        """What the state tree reads of each event, from the log as it grows (the states themselves
        are built only where the session asks: building every one cost about 3 µs an event)."""
        log = self.log
        invocations = log.invocations

        def about(inv: int) -> tuple[int, int, str, str]:
            found = invocations[inv]
            return found.thread, found.depth, found.function, found.path

        return Facts(log.kinds, log.lines, log.invs, about)


def _checkpoint_before(skeleton: SkeletonRecording, index: int) -> int:
    return max(c for c in skeleton.checkpoints if c <= index)


class _Feeder:
    """Feeds events into one log: a frame snapshot of an invocation the log knows already becomes an
    update of its locals (a window's start, the switch), output goes in at its event."""

    def __init__(self, log: EventLog, outputs: list[tuple[int, str, str]], first: int) -> None:
        self.log = log
        self.outputs = outputs
        self.next_output = 0
        self.first = first  # the skeleton's index of this log's state 0

    def feed(self, events: Iterable) -> None:
        """In runs: one `log.feed` call per run of plain events (one per event cost a quarter of
        joining a threaded recording), broken where a snapshot or a pending output must go in."""
        log = self.log
        run: list = []
        states = len(log.kinds)  # the log's states once `run` is fed (each state event makes one)
        next_output = self._next_output()
        for event in events:
            tag = event[0]
            if tag == "s":
                if run:
                    log.feed(run)
                    run = []
                if event[1] in log.invocations:
                    if event[5]:
                        log.feed([["u", event[1], event[5]]])
                    continue
            elif tag in _STATES:
                if next_output is not None and next_output <= self.first + states:
                    if run:
                        log.feed(run)
                        run = []
                    states = len(log.kinds)
                    self.flush_outputs(self.first + states)
                    next_output = self._next_output()
                states += 1
            run.append(event)
        if run:
            log.feed(run)

    def _next_output(self) -> int | None:
        """The skeleton index of the next output still to go in, if any."""
        return self.outputs[self.next_output][0] if self.next_output < len(self.outputs) else None

    def flush_outputs(self, upto: int) -> None:
        """Output written before the state with skeleton index `upto`."""
        while self.next_output < len(self.outputs) and self.outputs[self.next_output][0] <= upto:
            _count, stream, text = self.outputs[self.next_output]
            self.log.feed([["o" if stream == "stdout" else "e", text]])
            self.next_output += 1
