"""Which LINE events of a code the C tracer can make itself, from the code's line table, so that
sys.monitoring need not call it for them (issue 37: in a recursion the LINE callbacks were two
fifths of all callbacks, and a callback costs more than the recorder's work on its event).

Two shortcuts, each for lines that can be reached one way only, so the event made is the event
the LINE callback would have made, at the same moment of the program:

- **The first line** (`Shape.first_line`): the instruction right after RESUME starts it. Its event
  is made right after each start of the code (_ctracer.c, first_line_event).
- **Deferred lines** (`Shape.deferred`): a line whose instructions, from its start, only load
  (locals, constants, globals, cells) and pack tuples, lists and strings until an instruction that
  makes an event of its own: a CALL, or a return (`print(x)`, `return f(a, b)`, `return n`). Its
  event is made at that event (before it), or where an exception leaves the frame on the way
  (PY_UNWIND names the instruction). Between the line's start and that moment the program ran no
  Python code and changed nothing: no name was stored, no attribute read, no operator applied
  (each may run a library's code: its output, its `(return)`, a cache it fills would come before
  the line's event), and no eval-breaker check came (no signal's handler, no other thread).

Where a line qualifies (the rules below keep both exact; the differential tests in
tests/test_skeleton_recording.py hold them to the Python engine, which takes every LINE):
- it is one stretch of instructions (a `while` test is two: repeated at the loop's end);
- no jump or exception handler lands inside it; its start is not the target of a backward jump,
  nor of a jump from an instruction of the same line or of none;
- (deferred) no jump leaves it before its event, and no `try` or `with` covers it until then:
  an exception raised there leaves the frame (PY_UNWIND says where), none is handled in it;
- not a generator's or coroutine's code (its resumes re-enter lines in the middle).

Reading a code's bytecode here costs about 0.2 ms, once a code: a recording of every file asks it
of the user's code only (child/engines.py). The program's own tracer ends the shortcuts
(child/own_tracers.py). Standard library only (it runs in the recording child).
"""

from __future__ import annotations

import dis
from array import array

from neural_dap.trace.child.coroutines import RESUMABLE

# the instructions that always make an event the tracer receives (CALL; PY_RETURN), where a deferred
# line's event is made (not CALL_FUNCTION_EX: 3.12 says CALL there only for a callable that is no
# Python function)
_EVENTS = frozenset({"CALL", "CALL_KW", "RETURN_VALUE", "RETURN_CONST"})
# the instructions a deferred line may run before its event: ones that run no Python code at all (an
# attribute, an operator, a hash can run a library's: a property that prints, a cached_property that
# stores, a `(return)` a step shows; made later, the line's event would come after what they did)
_READS = frozenset(
    {
        "NOP",
        "EXTENDED_ARG",
        "CACHE",
        "PUSH_NULL",
        "KW_NAMES",
        "COPY",
        "SWAP",
        "LOAD_FAST",
        "LOAD_FAST_CHECK",
        "LOAD_FAST_LOAD_FAST",
        "LOAD_CONST",
        "LOAD_GLOBAL",
        "LOAD_DEREF",
        "LOAD_CLOSURE",
        "BUILD_TUPLE",
        "BUILD_LIST",
        "BUILD_STRING",
        "BUILD_SLICE",
    }
)
_JUMPS = frozenset(getattr(dis, "hasjump", ())) | frozenset(dis.hasjrel) | frozenset(dis.hasjabs)


class Shape:
    """A code's shortcuts: `first_line` (0: none) and `deferred`, per 2-byte unit (an instruction or
    one of its caches): L in a deferred line L up to that line's event's instruction (its caches
    too), -L at that instruction, 0 elsewhere."""

    def __init__(self, code, shortcuts: bool = True) -> None:
        """`shortcuts` False: none (the table of a code that takes every LINE)."""
        self.first_line = 0
        self.deferred = array("i", [0]) * (len(code.co_code) // 2)
        self.at_calls = False  # some deferred line's event is made at a CALL (not only at returns)
        if not shortcuts or code.co_flags & RESUMABLE:
            return
        try:
            instructions = list(dis.get_instructions(code))
            entries = dis.Bytecode(code).exception_entries  # type: ignore[attr-defined]
        except Exception:  # (a code dis cannot read: no shortcut, every LINE comes as it is)
            return
        self._find(code, instructions, entries)

    def _find(self, code, instructions: list, entries: list) -> None:
        line_of = {ins.offset: _line(code, ins) for ins in instructions}
        handlers = {entry.target for entry in entries}
        jumps_into: dict[int, list[int]] = {}  # target -> the jumps' own offsets
        for ins in instructions:
            if ins.opcode in _JUMPS and isinstance(ins.argval, int):
                jumps_into.setdefault(ins.argval, []).append(ins.offset)
        # each stretch's instructions, in one pass (instructions and stretches both in offset order)
        stretches = _stretches(code)
        own: dict[int, list] = {}  # line -> its stretches as [begin, end, instructions]
        k = 0
        for begin, end, line in stretches:
            inside = []
            while k < len(instructions) and instructions[k].offset < end:
                if instructions[k].offset >= begin:
                    inside.append(instructions[k])
                k += 1
            if line is not None and line > 0:
                own.setdefault(line, []).append((begin, end, inside))
        resume = next((k for k, ins in enumerate(instructions) if ins.opname == "RESUME"), None)
        first_start = instructions[resume + 1].offset if resume is not None and resume + 1 < len(instructions) else -1
        for line, found in own.items():
            if len(found) != 1:
                continue
            begin, end, inside = found[0]
            if not inside or any(
                ins.offset in handlers or (ins.offset != begin and ins.offset in jumps_into) for ins in inside
            ):
                continue
            sources = jumps_into.get(begin, [])
            if any(source >= begin or line_of.get(source) in (None, line) for source in sources):
                continue
            if begin == first_start:
                self.first_line = line
            else:
                self._defer(line, inside, entries, end)

    def _defer(self, line: int, inside: list, entries: list, end: int) -> None:
        for k, ins in enumerate(inside):
            if any(entry.start <= ins.offset < entry.end for entry in entries):
                return  # (an exception raised here could be handled in the frame, before the event)
            if ins.opname in _EVENTS:
                # every 2-byte unit up to the event's instruction's last cache: 3.13's PY_UNWIND
                # names the last cache of the instruction that raised
                after = inside[k + 1].offset if k + 1 < len(inside) else end
                for unit in range(inside[0].offset // 2, after // 2):
                    self.deferred[unit] = line
                self.deferred[ins.offset // 2] = -line
                self.at_calls = self.at_calls or ins.opname.startswith("CALL")
                return
            if ins.opname not in _READS or ins.opcode in _JUMPS:
                return


def _line(code, ins) -> int | None:
    return ins.line_number if hasattr(ins, "line_number") else ins.positions.lineno  # (3.13; 3.12)


def _stretches(code) -> list[list]:
    """[start, end, line] of `code`'s instructions, neighbours of one line merged."""
    stretches: list[list] = []
    for begin, end, line in code.co_lines():
        if stretches and stretches[-1][2] == line and stretches[-1][1] == begin:
            stretches[-1][1] = end
        else:
            stretches.append([begin, end, line])
    return stretches


__all__ = ["Shape"]
