"""Make the world model a launch asks for. The DAP layer gets this function, never the classes."""

from __future__ import annotations

from neural_dap.core.world import LaunchSpec, WorldError, WorldModel


def create_world(launch: LaunchSpec) -> WorldModel:
    world = launch.options.get("world", "recorded")
    reconcile = launch.options.get("reconcile") or "none"
    if world == "recorded":
        from neural_dap.world.recorded import RecordedWorld

        if reconcile != "none":
            raise WorldError("reconcile applies to world 'neural' (a recorded world is reality already)")
        return RecordedWorld()
    if world == "neural":
        from neural_dap.world.neural import create_neural_world

        return create_neural_world(launch)
    raise WorldError(f"unknown world {world!r}: use 'recorded' or 'neural'")
