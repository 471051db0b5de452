"""The recording child process: runs the debuggee under a tracer and streams compact events.

Runs as `python -m neural_dap.trace.child`, reads its JSON configuration from stdin (then stdin
becomes /dev/null for the debuggee) and writes batches of events to the file descriptor named in the
configuration (see `Channel` for the framing). It needs only the standard library (msgspec, when
the interpreter has it, makes the encoding faster), so it runs under any Python >= 3.10
(sys.monitoring is used on 3.12+).

What it sends is described, message by message, in `wire.py`.
"""

from __future__ import annotations
