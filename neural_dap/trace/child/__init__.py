"""The recording child process: runs the debuggee under a tracer and streams compact events.

Runs as `python -m neural_dap.trace.child`, reads its JSON configuration from stdin (then stdin
becomes /dev/null for the debuggee) and writes batches of events to the file descriptor named in the
configuration (see `Channel` for the framing). It needs only the standard library (msgspec, when
the interpreter has it, makes the encoding faster), so it runs under any Python >= 3.10
(sys.monitoring is used on 3.12+).

Wire events (one array each; `inv` is the invocation id, `line` the line number):
  ["k", code_id, name, filename, first_line]          a new code object (sent once)
  ["c", inv, code_id, line, depth, changes[, resumes[, library]]]
                                                      call (a generator resume is a new call)
  ["l", inv, line, changes, caught]                   line, locals *before* it runs
  ["r", inv, line, value]                             return (or yield)
  ["x", inv, line, value]                             exit by exception
  ["u", inv, changes]                                 a frame's locals just before its return or exit event,
                                                      and its caller's right after
  ["o", text] / ["e", text]                           stdout / stderr written since the last event
  ["end", outcome, message, exit_code, value]         how the run ended (last message)
A call's `depth` is its place on the stack (0: an entry of its own: the traced scope, a thread's
function, a task's coroutine run by the event loop); `resumes` is the invocation a resumed
generator or coroutine continues (-1: none); `library` is 1 where library code made the call: the
frame under it is not the traced frame below it (click running the user's command, a scheduler
running a callback), so its return goes back into that code, which returns to the caller's call
line later (debugpy stops there when stepping off the return). Both are left out where they say
nothing.
`changes` is a flat list [name, value, name, value, ...] of locals that changed since the previous
event of the same invocation. A value is an int (repr is str(int)), true/false/null (True/False/
None), a string (the repr), [] (the name was deleted) or [repr, type, children, more] for an
object with structured children. Sending ints raw moves their repr into the parent process.
"""

from __future__ import annotations
