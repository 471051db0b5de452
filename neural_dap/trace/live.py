"""The adapter's side of a live stop (see trace/child/live.py): a real, frozen copy of the program at
one event of a skeleton recording, asked to evaluate the user's expressions with real objects.

A checkpoint at or before the event replays to it and stays there, holding this connection; each
expression runs in a throwaway fork of that copy within its limits, so nothing it does reaches the
recording or the next expression. Closing the `LiveStop` (moving to another stop) ends the copy.
"""

from __future__ import annotations

import json
import socket
from bisect import bisect_right

import msgspec

from neural_dap.trace.skeleton import SkeletonRecording, _read_exactly

REPLAY_SECONDS = 60.0  # from the checkpoint to the stop: checkpoints are a fraction of a second of run apart
HELD_SECONDS = 5.0  # a held program's copy answers at once (nothing to replay), or it is stuck


class LiveError(Exception):
    """No live answer: the stop cannot be made live, or the expression failed there (the message
    says which, as the user should read it)."""


class LiveLimits(msgspec.Struct, frozen=True):
    seconds: float = 2.0  # one expression, then its fork is killed
    memory_mb: int = 1024  # more address space than the stop holds, for one expression
    max_repr: int = 10_000  # characters of a result's repr


DEFAULT_LIMITS = LiveLimits()


class LiveValue(msgspec.Struct, frozen=True):
    text: str
    type: str


class LiveStop:
    def __init__(self, recording: SkeletonRecording, index: int, limits: LiveLimits = DEFAULT_LIMITS) -> None:
        self.index = index
        self.limits = limits
        self.held_path: str | None = None  # the socket of a held program's copy (`held`), else None
        checkpoints = recording.checkpoints
        if not checkpoints or checkpoints[0] > index:
            raise LiveError("no checkpoint is left to replay from")
        if recording.diverged_at is not None and index >= recording.diverged_at:
            raise LiveError("the program did not replay the same way up to this stop")
        start = checkpoints[max(0, bisect_right(checkpoints, index) - 1)]
        path, _pid = recording.log.checkpoints[start]
        # (past a second thread: the replay follows the threads' recorded order to the stop)
        request = {"from": index, "to": index, "live": msgspec.structs.asdict(limits), **recording.schedule_for(index)}
        self._connect(path, request)

    @classmethod
    def held(cls, path: str, index: int, limits: LiveLimits = DEFAULT_LIMITS) -> LiveStop:
        """The copy of a program held at event `index` while every thread is recorded (child/live.py
        `serve_held`): made at the stop, nothing to replay."""
        live = cls.__new__(cls)
        live.index, live.limits, live.held_path = index, limits, path
        live._connect(path, {"live": msgspec.structs.asdict(limits)}, HELD_SECONDS)
        return live

    def _connect(self, path: str, request: dict, seconds: float = REPLAY_SECONDS) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(seconds)
        try:
            self.sock.connect(path)
            self.sock.sendall(json.dumps(request).encode() + b"\n")
            answer = self._receive()
        except OSError as exc:
            self.close()
            raise LiveError(f"the checkpoint did not answer ({exc})") from None
        if not isinstance(answer, dict) or answer.get("outcome"):
            self.close()
            raise LiveError("the program has ended here: nothing is live at this stop")

    def evaluate(self, expression: str, frame: int) -> LiveValue:
        """`expression` in the stop's `frame` (0: the innermost traced frame)."""
        reply = self._exchange({"expression": expression, "frame": frame})
        return LiveValue(str(reply.get("repr", "")), str(reply.get("type", "")))

    def check(self, checks: list[tuple[str, str]], frame: int) -> list[dict]:
        """A breakpoint's expressions at the stop, in one fork, in order: each `(expression, mode)`
        ("truth": a condition, "str": a log point's part) answers {"truth": bool}, {"text": str}
        or {"error": what it raised}."""
        reply = self._exchange({"checks": [list(c) for c in checks], "frame": frame})
        results = reply.get("results")
        if not isinstance(results, list) or len(results) != len(checks):
            raise LiveError("the live program answered something unreadable")
        return [r if isinstance(r, dict) else {"error": "unreadable"} for r in results]

    def ask(self, request: dict, frame: int) -> dict:
        """A request of the live copy's own (`children`, `roots`: see child/live.py), answered in a
        throwaway fork of it."""
        return self._exchange({**request, "frame": frame})

    def _exchange(self, request: dict) -> dict:
        """One request to the live copy and its answer, a dict; its `error` is raised as LiveError."""
        data = json.dumps(request).encode() + b"\n"
        try:
            self.sock.settimeout(self.limits.seconds + 10)
            self.sock.sendall(data)
            reply = self._receive()
        except OSError as exc:
            raise LiveError(f"the live program did not answer ({exc})") from None
        if not isinstance(reply, dict):
            raise LiveError("the live program answered something unreadable")
        if "error" in reply:
            raise LiveError(str(reply["error"]))
        return reply

    def _receive(self):
        header = _read_exactly(self.sock, 8)
        data = _read_exactly(self.sock, int.from_bytes(header, "little"))
        kind, body = data[:1], data[1:]
        try:
            return msgspec.msgpack.decode(body) if kind in (b"m", b"M") else msgspec.json.decode(body)
        except (msgspec.DecodeError, ValueError):
            raise OSError("an unreadable answer") from None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
