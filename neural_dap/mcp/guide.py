"""What the server tells an agent about using it: the instructions sent when a client connects, and
the `debug` prompt (a few lines each, as Undo's and DebugMCP's servers serve theirs). Plain text,
kept next to nothing else so the tool descriptions and this stay short and agree."""

from __future__ import annotations

INSTRUCTIONS = """\
neural-dap records one run of a Python program; the run is then travelled both ways and asked \
where a value came from: no prints, no re-runs.
How to debug with it:
1. `record` the failing program (program; module + args, e.g. pytest; or program + function + \
call_args). The session then stands at the exception that ended the run, else at its end.
2. At the wrong value ask `value_origin` (the statements that carried it, followed into the calls \
that made it) or `last_value` (the line that last changed it); read the lines with `source`.
3. Check the suspicion: `calls` (each call's arguments and result), `value_history`, `logpoint` \
(a message at every run of a line), `evaluate`; `goto` any moment ("m123") an answer names; `step` \
both ways, stopping at `breakpoints`.
4. `set_value` runs the real program on with another value (a branch) and says how it ended.
`predict` asks a neural model instead of running: its values are guesses with a probability p \
(`≈ v?` below 0.5); never take them as facts. Errors name the problem and the nearest valid names. \
Paths are relative to the workspace root."""


def debug_prompt(program: str, symptom: str = "") -> str:
    """The `debug` prompt: the steps above, for one program and what is wrong with it."""
    seen = f" It {symptom.strip()[:300]}." if symptom.strip() else ""
    return (
        f"Find the root cause of the bug in `{program[:200]}` with the neural-dap tools.{seen}\n"
        f'1. record {{"program": "{program[:200]}"}}: read its exit code, exception and output; the '
        "session stands at the exception, else at the end.\n"
        "2. value_origin of the value that is wrong there (a local, obj.attr or d['k']): follow its "
        "steps; where it stops, its `reason` says why. last_value says which line last changed it.\n"
        "3. Confirm with calls, value_history or logpoint before you change code; read lines with source.\n"
        "4. Optionally set_value a fixed value at the moment before the bug and see that the branch ends well.\n"
        "Name the line to fix and why, citing the moments (m123) that show it."
    )
