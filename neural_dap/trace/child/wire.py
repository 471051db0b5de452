"""What the recording child sends the adapter: every message of the recording wire, named once.

Messages are arrays, a tag first; `Channel` frames batches of them (and the skeleton's fixed-size
binary records: child/skeleton.py). The adapter reads them in `trace/eventlog.py` (a full
recording) and `trace/skeleton.py` (a skeleton's messages). `inv` is an invocation id, `line` a
line number.

Events of a full capture (every state; a skeleton sends them for its materialised windows, a live
stop's event, and every thread after a switch):
  ["k", code_id, name, filename, first_line]          a new code object (sent once)
  ["c", inv, code_id, line, depth, changes[, resumes[, library]]]
                                                      call (a generator resume is a new call)
  ["s", inv, code_id, line, depth, changes]           a frame already on the stack where a capture
                                                      begins: its locals there (not a state)
  ["l", inv, line, changes, caught]                   line, locals *before* it runs
  ["r", inv, line, value]                             return (or yield)
  ["x", inv, line, value]                             exit by exception
  ["u", inv, changes]                                 a frame's locals just before its return or exit
                                                      event, and its caller's right after
  ["t", number[, name]]                               the events that follow ran in that thread
  ["o", text] / ["e", text]                           stdout / stderr written since the last event
                                                      (a skeleton adds the event count: [tag, text, n])
Messages about the recording:
  ["engine", name, python_version]                    which engine records, under which interpreter
  ["cp", count, socket_path, pid] / ["cpx", count]    a checkpoint taken at event `count` / let go
  ["switch", count]                                   every thread is recorded in full from here
                                                      (child/switch.py; -1: at the records' end)
  ["stopped", count, reason]                          a live program holds at this event
                                                      (child/frontier.py); then [thread, copy]
                                                      (every thread in full), the threads alive
                                                      and idle, and the library's return values
                                                      the step met: [[inv, name, text, event]]
                                                      (child/returned.py)
  ["nolive"]                                          this engine cannot stop a live program
  ["whatif", count, name, value]                      a what-if branch set a value there
  ["refused", count, first]                           the sandbox refused `count` effects
  ["end", outcome, message, exit_code, value]         how the run ended (last message)

A call's `depth` is its place on the stack (0: an entry of its own: the traced scope, a thread's
function, a task's coroutine run by the event loop); `resumes` is the invocation a resumed
generator or coroutine continues (-1: none; in a skeleton's call records -2 marks a generator's or
coroutine's first run); `library` is 1 where library code made the call: the frame under it is not
the traced frame below it (click running the user's command, a scheduler running a callback), so
its return goes back into that code, which returns to the caller's call line later (debugpy stops
there when stepping off the return). Both are left out where they say nothing.
`changes` is a flat list [name, value, name, value, ...] of locals that changed since the previous
event of the same invocation. A value is an int (repr is str(int)), true/false/null (True/False/
None), a string (the repr), [] (the name was deleted) or [repr, type, children, more] for an
object with structured children. Sending ints raw moves their repr into the parent process.

Standard library only.
"""

from __future__ import annotations


def call_event(inv: int, code_id: int, line: int, depth: int, changes, resumes: int, library: bool) -> tuple:
    """The call event, the optional fields only where they say something (a resumed generator; a
    call by library code)."""
    if library:
        return ("c", inv, code_id, line, depth, changes, resumes, 1)
    if resumes >= 0:
        return ("c", inv, code_id, line, depth, changes, resumes)
    return ("c", inv, code_id, line, depth, changes)


def snapshot_event(inv: int, code_id: int, line: int, depth: int, changes) -> tuple:
    """A frame already on the stack where a recording (or a window of one) begins: its locals there."""
    return ("s", inv, code_id, line, depth, changes)


__all__ = ["call_event", "snapshot_event"]
