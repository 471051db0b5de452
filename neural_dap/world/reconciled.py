"""A neural world checked against reality after every action.

Reality is the recorded execution (exact, steps back too) or a real debugpy session (forward only).
Each predicted stop is compared with the real one (line, event, stack, every local, the value);
divergences are attached to the stop (the DAP layer marks the variables and says what differs)
and counted. With `trust: "reality"` a diverging prediction is replaced by the real state, and the
model predicts on from there; with `trust: "model"` the session follows the prediction.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec

from neural_dap.core.actions import Action, Target
from neural_dap.core.state import State
from neural_dap.core.world import (
    Accept,
    Capabilities,
    Divergence,
    ExceptionFilter,
    HitFilter,
    LaunchSpec,
    Stop,
    WorldError,
    accepted,
)
from neural_dap.reality.compare import compare_locals, compare_states, normalize
from neural_dap.reality.debugpy_peer import DebugpyPeer, RealityError, Snapshot
from neural_dap.world.neural import NeuralWorld
from neural_dap.world.recorded import RecordedWorld


class ReconciledWorld:
    name = "neural"

    def __init__(self, model: NeuralWorld, reality: str, trust: str = "model") -> None:
        if reality not in ("recorded", "debugpy"):
            raise WorldError(f"unknown reality {reality!r}: use 'recorded' or 'debugpy'")
        if trust not in ("model", "reality"):
            raise WorldError(f"trust must be 'model' or 'reality', not {trust!r}")
        self.model = model
        self.reality_kind = reality
        self.trust = trust
        self.capabilities = Capabilities(exact=False, inverse=True)
        self.recorded: RecordedWorld | None = None
        self.peer: DebugpyPeer | None = None
        self.snapshots: dict[int, tuple[State, Snapshot | None]] = {}  # id(model state) -> debugpy's stop there
        self.peer_at: State | None = None  # the model state debugpy's position corresponds to
        self.peer_ahead = False  # debugpy already stands on the first line of a call the model is at
        self.compared = 0
        self.by_kind: Counter = Counter()
        self.divergent_stops = 0
        self.snapped = 0
        self.notes_given: set[str] = set()

    # -- launch -----------------------------------------------------------------------------------------
    async def start(self, launch: LaunchSpec) -> Stop:
        if launch.entry is not None and launch.entry.returns is not None:
            raise WorldError("a session that starts from a return value can only be predicted: use reconcile 'none'")
        stop = await self.model.start(launch)
        if self.reality_kind == "recorded":
            # the frames the model writes: CWM's traces have 3.11's comprehension frames, nd's have none
            self.recorded = RecordedWorld(
                comprehension_frames=getattr(self.model, "dialect", "nd") == "cwm", as_debugpy=False
            )
            real = await self.recorded.start(launch)
            return await self._reconcile(stop, real.state, None)
        entry = (launch.entry.function, launch.entry.args or "") if launch.entry else None
        self.peer = DebugpyPeer(launch.program, launch.args, launch.cwd, launch.env, python=launch.python, entry=entry)
        try:
            snapshot = await self.peer.start()
        except (RealityError, OSError) as exc:
            raise WorldError(f"debugpy could not start the program: {exc}") from None
        self.peer_at = stop.state
        if stop.state.event == "call" and snapshot is not None:
            self.peer_ahead = True  # debugpy stops on the first line, after the call
        return await self._reconcile_snapshot(stop, snapshot)

    # -- acting -------------------------------------------------------------------------------------------
    async def act(
        self,
        action: Action,
        *,
        exceptions: frozenset[ExceptionFilter] = frozenset(),
        breakpoints: tuple[Target, ...] = (),
        accept: Accept | None = None,
        hits: HitFilter | None = None,
    ) -> Stop:
        del hits  # (the recording replays the model's decisions, one per hit the model met)
        decisions: list[bool] = []

        async def recording_accept(stop: Stop) -> bool:
            decision = await accepted(accept, stop)
            decisions.append(decision)
            return decision

        before = self.model.current
        stop = await self.model.act(action, exceptions=exceptions, breakpoints=breakpoints, accept=recording_accept)
        if self.recorded is not None:
            replay = iter(decisions)
            real = await self.recorded.act(
                action, exceptions=exceptions, breakpoints=breakpoints, accept=lambda _s: next(replay, True)
            )
            if action.kind == "step_return" and self.model.steps_past_return and not real.at_end:
                real = await self.recorded.act(Action("step_into"))  # where the model's step out lands too
            return await self._reconcile(stop, real.state, action)
        return await self._act_debugpy(action, before, stop)

    async def _reconcile(self, stop: Stop, actual: State, action: Action | None) -> Stop:
        divergences = compare_states(stop.state, actual)
        return await self._conclude(stop, divergences, actual if action is not None else None, action)

    async def _conclude(
        self, stop: Stop, divergences: list[Divergence], actual: State | None, action: Action | None
    ) -> Stop:
        self.compared += 1
        if not divergences:
            return stop
        self.divergent_stops += 1
        self.by_kind.update(d.kind for d in divergences)
        note = "neural-dap: the prediction differs from reality: " + "; ".join(d.describe() for d in divergences[:6])
        if len(divergences) > 6:
            note += f"; and {len(divergences) - 6} more"
        if self.trust == "reality" and actual is not None and action is not None:
            stop = await self._snap(actual, action)
            note += " (trust: reality, continuing from the real state)"
        return msgspec.structs.replace(stop, divergences=tuple(divergences), note=note)

    async def _snap(self, actual: State, action: Action) -> Stop:
        """Replace the last prediction with the real state and predict on from it."""
        self.snapped += 1
        return await self.model.replace_current(actual, action)

    # -- debugpy -------------------------------------------------------------------------------------------------
    async def _act_debugpy(self, action: Action, before: State | None, stop: Stop) -> Stop:
        assert self.peer is not None
        landed = stop.state
        cached = self.snapshots.get(id(landed))
        if cached is not None and cached[0] is landed:
            return await self._reconcile_snapshot(stop, cached[1], compare_only=True)
        if action.inverse:
            return self._note(
                stop,
                "debugpy cannot step back: predictions there are not checked until the session moves forward again",
            )
        if before is not self.peer_at:
            return self._note(stop, "debugpy has gone another way and cannot step back: this stop is not checked")
        command = self._debugpy_command(action, before, landed)
        snapshot: Snapshot | None
        try:
            if command is None:
                snapshot = self.snapshots.get(id(before), (None, None))[1]
            elif command == "continue" and action.kind == "breakpoint":
                await self.peer._call(
                    "setBreakpoints",
                    {"source": {"path": self.peer.program}, "breakpoints": [{"line": ln} for ln in action.lines]},
                )
                snapshot = await self.peer.step("continue")
            else:
                if command == "continue":
                    await self.peer._call("setBreakpoints", {"source": {"path": self.peer.program}, "breakpoints": []})
                snapshot = await self.peer.step(command)
        except RealityError as exc:
            return self._note(stop, f"debugpy did not answer ({exc}); this stop is not checked")
        self.peer_at = landed
        self.peer_ahead = landed.event == "call" and snapshot is not None
        return await self._reconcile_snapshot(stop, snapshot, action=action)

    def _debugpy_command(self, action: Action, before: State | None, landed: State) -> str | None:
        kind = action.kind
        if kind == "step_into":
            return None if self.peer_ahead else "stepIn"
        if kind == "step_over":
            if before is not None and before.terminal:
                return "next"
            return "stepIn" if landed.terminal else "next"
        if kind == "step_return":
            return "stepOut"
        return "continue"

    async def _reconcile_snapshot(
        self, stop: Stop, snapshot: Snapshot | None, compare_only: bool = False, action: Action | None = None
    ) -> Stop:
        self.snapshots[id(stop.state)] = (stop.state, snapshot)
        divergences = self._compare_snapshot(stop, snapshot)
        actual = None
        if (
            divergences
            and self.trust == "reality"
            and snapshot is not None
            and stop.state.event == "line"
            and not compare_only
            and action is not None
        ):
            actual = State(
                "line",
                snapshot.line,
                stop.state.source if snapshot.line == stop.state.line else "",
                snapshot.function,
                stop.state.depth,
                stop.state.invocation,
                snapshot.locals,
                path=stop.state.path,
            )
            actual = msgspec.structs.replace(actual, source=self.model.line_text(snapshot.line))
        return await self._conclude(stop, divergences, actual, action)

    def _compare_snapshot(self, stop: Stop, snapshot: Snapshot | None) -> list[Divergence]:
        state = stop.state
        if snapshot is None:
            return (
                []
                if stop.at_end
                else [Divergence("end", predicted=f"line {state.line}", actual="the program had ended")]
            )
        if stop.at_end:
            return [Divergence("end", predicted="the program ends", actual=f"{snapshot.function} line {snapshot.line}")]
        out: list[Divergence] = []
        if state.terminal and len(stop.stack) > 1:
            caller = stop.stack[1]
            where = (caller.function, caller.line)
            if state.event == "return":
                # (debugpy names a method's value with its class: `(return) Box.get`)
                real = next(
                    (v for k, v in snapshot.returns.items() if k.rsplit(".", 1)[-1].split(" ")[-1] == state.function),
                    None,
                )
                if normalize(real) != normalize(state.value):
                    out.append(Divergence("value", name=state.function, predicted=state.value, actual=real))
            local_reprs = caller.locals
        else:
            where = (state.function, state.line)
            local_reprs = state.locals
        if (snapshot.function, snapshot.line) != where and not (
            state.event == "call" and snapshot.function == state.function
        ):
            out.append(
                Divergence("line", predicted=f"{where[0]}:{where[1]}", actual=f"{snapshot.function}:{snapshot.line}")
            )
        out.extend(compare_locals(local_reprs, snapshot.locals))
        return out

    def _note(self, stop: Stop, text: str) -> Stop:
        if text in self.notes_given:
            return stop
        self.notes_given.add(text)
        return msgspec.structs.replace(stop, note=f"neural-dap: {text}")

    # -- the rest of the interface ---------------------------------------------------------------------------------
    def source(self, path: str) -> str | None:
        return self.model.source(path)

    def summary(self) -> dict[str, Any]:
        out = self.model.summary()
        out.update(
            {
                "reconcile": self.reality_kind,
                "trust": self.trust,
                "statesCompared": self.compared,
                "divergentStops": self.divergent_stops,
                "divergences": sum(self.by_kind.values()),
                "divergencesByKind": dict(self.by_kind),
                "snappedToReality": self.snapped,
            }
        )
        if self.peer is not None:
            out["debugpyRequests"] = self.peer.requests
        return out

    async def close(self) -> None:
        await self.model.close()
        if self.recorded is not None:
            await self.recorded.close()
        if self.peer is not None:
            await self.peer.close()
