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

PREFIX_LIMIT = 1_000_000  # events before the switch kept (a full recording's memory)
WINDOW = 50_000  # events rebuilt by one replay
_STATES = frozenset(("c", "l", "r", "x"))


def join(skeleton: SkeletonRecording) -> tuple[Recording, int]:
    """The whole run as one full recording, and the index (in it) of the first event after the
    switch. Raises DivergenceError where a replay of the prefix does not follow the recording."""
    switched = skeleton.log.switched_at
    assert switched is not None
    # events since the switch dropped past the budget (trace/rolling.py): the recording starts at
    # the cut, its frames as snapshots there, and nothing of the prefix is rebuilt
    first = switched if skeleton.log.threaded.dropped else max(0, switched - PREFIX_LIMIT)
    program = skeleton.program or Program(skeleton.main_path)
    log = EventLog(program, skeleton.main_path)
    log.codes.update(skeleton.log.codes)
    log.sources.update(skeleton.sources)
    log.source_lines.update(skeleton.source_lines)
    # in the order written, by event: a stable sort on the event alone (print() writes its text and
    # its newline at one event: sorting on the text too put the newline first)
    by_event = sorted(skeleton.log.outputs, key=lambda output: output[0])
    outputs = [(count, stream, text) for count, stream, text in by_event if first <= count]
    if skeleton.log.threaded.dropped:  # (the output before the switch comes first, with the cut's)
        outputs = [(first, stream, text) for _, stream, text in by_event]
    feeder = _Feeder(log, outputs, first)
    for a in range(first, switched, WINDOW):
        b = min(switched, a + WINDOW) - 1
        window = skeleton._materialise(_checkpoint_before(skeleton, a), a, b)  # (replayed, checked)
        if skeleton.diverged_at is not None and skeleton.diverged_at <= b:
            raise DivergenceError(skeleton.divergence_message())
        feeder.feed(window.raw_events)
    if skeleton.log.threaded.dropped:
        feeder.flush_outputs(first)  # (before the cut's own: it came earlier)
    with paused_collector():  # (up to 2M events of every thread indexed: see collector_pause.py)
        feeder.feed(skeleton.log.threaded)
    feeder.flush_outputs(first + len(log.kinds) + 1)
    log.engine, log.python = skeleton.log.engine, skeleton.log.python
    log.refused = skeleton.log.refused
    outcome = skeleton.outcome
    full = Recording(program, log, outcome, skeleton.fd_stdout, skeleton.fd_stderr, skeleton.seconds)
    full.module_file = skeleton.main_path if program.module else None
    return full, switched - first


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
