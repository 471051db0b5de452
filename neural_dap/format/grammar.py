"""What a predicted frame may be, as an automaton: program-aware decoding for the trace format.

A `FrameConstraint` accepts exactly the frames that are possible after an action: the event token
among those the action can produce, the locals as a JSON object of repr strings whose keys are
names the landing scope can hold (the invocation's earlier keys first, in their order, then new
ones; `".."` only for a key with an earlier value), the source line among the candidate lines, and
for return / exception frames a JSON string value. The candidates come from static facts about
the program (`core.flow`); this module only knows the trace format.

The automaton runs over *pieces*: special tokens, and text as UTF-8 bytes (so a byte-level BPE
token that splits a character is still judged correctly). A model client uses it two ways:
  - token by token (the in-process client masks the logits: `llm.constrained`);
  - segment by segment, for a server that takes a regex, a list of choices or a list of allowed
    token ids for each segment between special tokens (`segment`).
States are plain tuples, hashable, so masks can be cached per state.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from neural_dap.core.source import SourceInfo
from neural_dap.format.tokens import (
    ACTION_SEP,
    ARG_SEP,
    END,
    EVENT_TOKENS,
    FRAME_SEP,
    TOKEN_EVENTS,
    Special,
    split_specials,
)

State = tuple
# States a search for the end of a segment may visit: far more than a frame's automaton has.
_CLOSE_SEARCH_STATES = 20_000

_QUOTE, _BACKSLASH = 0x22, 0x5C
_COLON = b': "'
_COMMA = b', "'
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESCAPES = frozenset(b'"\\/bfnrtu')


def is_plain(byte: int) -> bool:
    """A byte that may stand anywhere inside a JSON string (not a quote, backslash or control byte)."""
    return byte >= 0x20 and byte not in (_QUOTE, _BACKSLASH) and byte != 0x7F


@dataclass(frozen=True)
class FrameContext:
    """One way the predicted frame can be: its event, its candidate lines, and for call / line
    frames what the locals of the invocation it lands in may hold."""

    event: str
    lines: tuple[int, ...]
    shadow: tuple[str, ...] = ()  # the invocation's keys as of its latest frame, in order
    deletable: frozenset[str] = frozenset()  # shadow keys that may be gone (del, end of `except as`)
    names: tuple[str, ...] = ()  # names the scope can bind: new keys come from these
    ordered: bool = True  # new keys appear in `names` order (fast locals); a dict namespace: any order
    loose: bool = False  # any of the shadow's keys and names, once each, in any order (after a step back)

    def allowed_keys(self, si: int, nk) -> tuple[list[str], bool]:
        """(keys allowed next, whether the object may close) at key position (si, nk)."""
        if self.loose:
            return [n for n in (*self.shadow, *(n for n in self.names if n not in self.shadow)) if n not in nk], True
        keys: list[str] = []
        rest_deletable = True
        for j in range(si, len(self.shadow)):
            keys.append(self.shadow[j])
            if self.shadow[j] not in self.deletable:
                rest_deletable = False
                break
        if rest_deletable:
            keys += list(self._new_after(nk))
        return keys, rest_deletable

    def _new_after(self, nk) -> list[str]:
        shadow = set(self.shadow)
        if self.ordered:
            return [n for n in self.names[nk:] if n not in shadow]
        return [n for n in self.names if n not in shadow and n not in nk]

    def after_key(self, si: int, nk, key: str):
        if self.loose:
            return si, nk | {key}
        if key in self.shadow[si:]:
            return self.shadow.index(key, si) + 1, nk
        if self.ordered:
            return len(self.shadow), self.names.index(key) + 1
        return len(self.shadow), nk | {key}

    def start_nk(self):
        return 0 if self.ordered and not self.loose else frozenset()


class _Key:
    """What a constraint's token masks depend on (the program and the frame contexts), hashed once:
    two constraints with equal keys allow the same tokens in the same states, so a model client
    keeps their masks across predictions (`llm.constrained.TokenIndex.mask`)."""

    __slots__ = ("hash", "value")

    def __init__(self, value: tuple) -> None:
        self.value = value
        self.hash = hash(value)

    def __hash__(self) -> int:
        return self.hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and self.hash == other.hash and self.value == other.value


def _key_bytes(name: str) -> bytes:
    return json.dumps(name)[1:-1].encode()


@dataclass(eq=False)  # hashed by identity: masks are cached per constraint
class FrameConstraint:
    """The frames possible after one action. `contexts` by event; `end` allows `<|end_of_text|>`."""

    source: SourceInfo
    contexts: list[FrameContext]
    end: bool = False
    forced_event: str | None = None  # the prompt already ends with this event token (cwm forcing)
    _keys: dict[str, bytes] = field(default_factory=dict, init=False, repr=False)
    _options: dict[frozenset, dict[bytes, tuple[int, ...]]] = field(default_factory=dict, init=False, repr=False)
    mask_key: _Key = field(init=False, repr=False)

    def __post_init__(self) -> None:
        for ctx in self.contexts:
            for name in (*ctx.shadow, *ctx.names):
                self._keys.setdefault(name, _key_bytes(name))
        self.mask_key = _Key((self.source.text, tuple(self.contexts), self.end, self.forced_event))

    # -- what may come -------------------------------------------------------------------------------
    @property
    def events(self) -> tuple[str, ...]:
        return tuple(sorted({c.event for c in self.contexts}))

    def landings(self) -> frozenset[tuple[str, int]]:
        return frozenset((c.event, line) for c in self.contexts for line in c.lines)

    def start(self) -> State:
        if self.forced_event is not None:
            state = self._after_event(self.forced_event)
            return state if state is not None else ("dead",)  # no context for the forced event: nothing fits
        return ("event",)

    def _after_event(self, event: str) -> State | None:
        alive = frozenset((k, 0, c.start_nk(), None) for k, c in enumerate(self.contexts) if c.event == event)
        if not alive:
            return None
        if event in ("call", "line"):
            return ("locals", "open", None, alive)
        return ("action_sep", event, alive)

    def done(self, state: State) -> bool:
        return state[0] == "done"

    # -- steps -----------------------------------------------------------------------------------------
    def step_special(self, state: State, token: str) -> State | None:
        kind = state[0]
        if kind == "event":
            if token == END and self.end:
                return ("ended",)
            for event, special in EVENT_TOKENS.items():
                if token == special:
                    return self._after_event(event)
            return None
        if kind == "ended":
            return ("done",) if token == FRAME_SEP else None
        if kind == "locals" and state[1] == "closed" and token == ACTION_SEP:
            alive = state[3]
            return (
                "line",
                "line_or_call",
                b"",
                frozenset(line for k, *_ in alive for line in self.contexts[k].lines),
                alive,
            )
        if kind == "action_sep" and token == ACTION_SEP:
            alive = state[2]
            return ("line", state[1], b"", frozenset(line for k, *_ in alive for line in self.contexts[k].lines), alive)
        if kind == "line" and state[2] in self._line_options(state[3]):
            if state[1] == "line_or_call":
                return ("done",) if token == FRAME_SEP else None
            return ("value", 0, 0) if token == ARG_SEP else None
        if kind == "value" and state[1] == 2 and token == FRAME_SEP:
            return ("done",)
        return None

    def step_bytes(self, state: State | None, data: bytes) -> State | None:
        for byte in data:
            if state is None:
                return None
            state = self.step_byte(state, byte)
        return state

    def step_byte(self, state: State, byte: int) -> State | None:
        kind = state[0]
        if kind == "locals":
            return self._locals_byte(state, byte)
        if kind == "line":
            prefix = state[2] + bytes((byte,))
            options = self._line_options(state[3])
            if any(option.startswith(prefix) for option in options):
                return ("line", state[1], prefix, state[3], state[4])
            return None
        if kind == "value":
            return _string_byte(state, byte)
        return None

    def free_text(self, state: State) -> bool:
        """Inside a JSON string value (not in an escape): every plain byte is accepted here."""
        if state[0] == "locals":
            return state[1] == "value" and state[2][0] == 0
        return state[0] == "value" and state[1] == 1 and state[2] == 0

    def in_values(self, state: State) -> bool:
        """In the locals object or a returned/raised value, before its end: the parts of a frame a
        model can make as long as it likes (more keys, longer strings)."""
        return (state[0] == "locals" and state[1] not in ("open", "closed")) or (
            state[0] == "value" and state[1] in (0, 1)
        )

    def _line_options(self, lines: frozenset) -> dict[bytes, tuple[int, ...]]:
        """The text of each candidate line (with its newline) -> the lines that have that text."""
        options = self._options.get(lines)
        if options is None:
            options = {}
            for line in sorted(lines):
                key = (self.source.line_text(line) + "\n").encode()
                options[key] = (*options.get(key, ()), line)
            self._options[lines] = options
        return options

    def forced_rest(self, state: State) -> bytes | None:
        """The rest of the frame where the automaton leaves only one: in the source line of a call or
        line frame, once one candidate line starts with what is written (the frame ends after it).
        None elsewhere, and where the rest would begin inside a character (it is decoded apart)."""
        if state[0] != "line" or state[1] != "line_or_call":
            return None
        prefix = state[2]
        options = [o for o in self._line_options(state[3]) if o.startswith(prefix)]
        if len(options) != 1:
            return None
        rest = options[0][len(prefix) :]
        return None if rest and (rest[0] & 0xC0) == 0x80 else rest

    def forced_ending(self, state: State | None) -> str | None:
        """The rest of the frame from `state` where nothing is left to choose: special tokens the
        frame forces (as their strings) and then the `forced_rest` of its line, the stop token
        implied. None where something is still to choose."""
        out: list[str] = []
        while state is not None and not self.done(state):
            rest = self.forced_rest(state)
            if rest is not None:
                return "".join(out) + rest.decode()
            try:
                kind, what = self.segment(state)
            except ValueError:  # in the middle of the locals
                return None
            if kind != "special" or len(what) != 1:  # type: ignore[arg-type]
                return None
            token = what[0]  # type: ignore[index]
            state = self.step_special(state, token)
            if state is not None and self.done(state):
                return "".join(out)  # the frame separator: the stop token
            out.append(token)
        return None

    def lines_for(self, state: State) -> frozenset[int]:
        """The candidate lines still open at a line state (to tell the parser)."""
        return state[3] if state[0] == "line" else frozenset()

    # -- the locals object ---------------------------------------------------------------------------
    def _locals_byte(self, state: State, byte: int) -> State | None:
        _, mode, data, alive = state
        if mode == "open":
            return ("locals", "key_or_close", None, alive) if byte == ord("{") else None
        if mode == "key_or_close":
            if byte == _QUOTE:
                return self._key_start(alive)
            if byte == ord("}") and any(self._can_close(e) for e in alive):
                return ("locals", "closed", None, frozenset(e for e in alive if self._can_close(e)))
            return None
        if mode == "key":
            if byte == _QUOTE:
                survivors = []
                for k, si, nk, _ in alive:
                    ctx = self.contexts[k]
                    for name in ctx.allowed_keys(si, nk)[0]:
                        if self._keys[name] == data:
                            si2, nk2 = ctx.after_key(si, nk, name)
                            survivors.append((k, si2, nk2, name))
                            break
                return ("locals", "colon", 0, frozenset(survivors)) if survivors else None
            prefix = data + bytes((byte,))
            kept = frozenset(
                e
                for e in alive
                if any(self._keys[n].startswith(prefix) for n in self.contexts[e[0]].allowed_keys(e[1], e[2])[0])
            )
            return ("locals", "key", prefix, kept) if kept else None
        if mode == "colon":
            if byte != _COLON[data]:
                return None
            if data + 1 == len(_COLON):
                return ("locals", "value", (0, 0), alive)
            return ("locals", "colon", data + 1, alive)
        if mode == "value":
            escape, dots = data
            if escape:
                nxt = _escape_byte(escape, byte)
                return None if nxt is None else ("locals", "value", (nxt, 3), alive)
            if byte == _BACKSLASH:
                return ("locals", "value", (1, 3), alive)
            if byte == _QUOTE:
                if dots == 2:
                    alive = frozenset(e for e in alive if e[3] in self.contexts[e[0]].shadow)
                    if not alive:
                        return None
                return ("locals", "sep", 0, alive)
            if not is_plain(byte):
                return None
            return ("locals", "value", (0, dots + 1 if byte == ord(".") and dots < 2 else 3), alive)
        if mode == "sep":
            if data == 0 and byte == ord("}"):
                closing = frozenset(e for e in alive if self._can_close(e))
                return ("locals", "closed", None, closing) if closing else None
            if byte != _COMMA[data]:
                return None
            if data == 0:  # a comma only where another key can follow
                alive = frozenset(e for e in alive if self.contexts[e[0]].allowed_keys(e[1], e[2])[0])
                if not alive:
                    return None
            if data + 1 == len(_COMMA):
                return self._key_start(alive)
            return ("locals", "sep", data + 1, alive)
        return None  # closed: only <|action_sep|> may follow

    def _key_start(self, alive: frozenset) -> State | None:
        kept = frozenset(e for e in alive if self.contexts[e[0]].allowed_keys(e[1], e[2])[0])
        return ("locals", "key", b"", kept) if kept else None

    def _can_close(self, entry) -> bool:
        k, si, nk, _ = entry
        return self.contexts[k].allowed_keys(si, nk)[1]

    # -- whole completions -----------------------------------------------------------------------------
    def run(self, text: str, *, complete: bool = True) -> State | None:
        """The state after a completion's text (special tokens as their strings); None if rejected.
        With `complete`, the text must be a whole frame (the stop token is implied)."""
        state: State | None = self.start()
        for piece in split_specials(text):
            if state is None:
                return None
            state = (
                self.step_special(state, piece)
                if isinstance(piece, Special)
                else self.step_bytes(state, piece.encode())
            )
        if state is not None and complete:
            state = self.step_special(state, FRAME_SEP)
            return state if state is not None and self.done(state) else None
        return state

    def accepts(self, text: str) -> bool:
        return self.run(text) is not None

    def landed(self, text: str) -> frozenset[tuple[str, int]]:
        """The (event, line) landings an accepted completion can mean (one, unless two candidate
        lines have the same text)."""
        state: State | None = self.start()
        event = self.forced_event
        line_state: State | None = None
        for piece in split_specials(text):
            if state is None:
                return frozenset()
            if isinstance(piece, Special):
                if state[0] == "event":
                    event = TOKEN_EVENTS.get(piece, event)
                if state[0] == "line":
                    line_state = state
                state = self.step_special(state, piece)
            else:
                state = self.step_bytes(state, piece.encode())
        if state is not None and state[0] == "line":
            line_state = state
        if line_state is None or event is None:
            return frozenset()
        return frozenset((event, line) for line in self._line_options(line_state[3]).get(line_state[2], ()))

    # -- segments, for servers that constrain a segment at a time ---------------------------------------
    def segment(self, state: State) -> tuple[str, object]:
        """What the next segment may be: ("special", specials) | ("regex", pattern) | ("choice", strings)."""
        kind = state[0]
        if kind == "event":
            return "special", tuple(EVENT_TOKENS[e] for e in self.events) + ((END,) if self.end else ())
        if kind == "ended":
            return "special", (FRAME_SEP,)
        if kind == "locals" and state[1] == "open":
            return "regex", self._locals_regex(state[3])
        if kind == "locals" and state[1] == "closed":
            return "special", (ACTION_SEP,)
        if kind == "action_sep":
            return "special", (ACTION_SEP,)
        if kind == "line":
            if state[2] in self._line_options(state[3]):
                return "special", (FRAME_SEP,) if state[1] == "line_or_call" else (ARG_SEP,)
            return "choice", [o.decode() for o in self._line_options(state[3]) if o.startswith(state[2])]
        if kind == "value":
            if state[1] == 2:
                return "special", (FRAME_SEP,)
            return "regex", '"' + _CONTENT + '*"'
        raise ValueError(f"no segment starts at {state[0]}")

    def close_segment(self, state: State) -> bytes | None:
        """The shortest printable bytes from `state` to the end of its text segment (a string
        closed, the locals object closed with the keys it must still have, a whole source line).
        A breadth-first walk of the automaton: its states do not hold the text already written, so
        there are few of them."""
        seen = {state}
        queue: deque[tuple[State, bytes]] = deque([(state, b"")])
        while queue and len(seen) < _CLOSE_SEARCH_STATES:
            current, written = queue.popleft()
            if self._segment_ended(current):
                return written
            for byte in self._closing_bytes(current):
                after = self.step_byte(current, byte)
                if after is not None and after not in seen:
                    seen.add(after)
                    queue.append((after, written + bytes([byte])))
        return None

    def _closing_bytes(self, state: State) -> Iterable[int]:
        """Bytes worth trying: a source line's own next bytes (any text, newline included), else
        printable ASCII (JSON keys, punctuation, string content)."""
        if state[0] == "line":
            prefix = state[2]
            return sorted({o[len(prefix)] for o in self._line_options(state[3]) if len(o) > len(prefix)})
        return range(0x20, 0x7F)

    def _segment_ended(self, state: State) -> bool:
        if self.done(state):
            return True
        try:
            return self.segment(state)[0] == "special"
        except ValueError:  # in the middle of the locals object
            return False

    def _locals_regex(self, alive: Iterable) -> str:
        return r"\{(?:" + "|".join(_context_regex(self.contexts[k]) for k, *_ in sorted(alive)) + r")\}"

    # -- the whole frame as one regex, for servers whose grammar engine matches special tokens ---------
    def frame_regex(self, *, head_only: bool = False) -> str | None:
        """The whole frame as one regular expression, special tokens written as their strings, the
        stop token left out (a server allows it where the expression ends; the empty alternative
        where the traced scope may end lets it choose `<|end_of_text|>`, its end-of-sequence token,
        first). For a server that constrains a whole request with a regex and matches a special
        token by its text (vLLM's xgrammar does with the trace format's added tokens): one request
        per frame. It accepts what the automaton accepts and, after a step back (`loose` contexts),
        a little more (keys repeated), so a completion is still checked with `accepts`. With
        `head_only`, a call or line frame whose event has one candidate line ends after its
        locals: the rest is the program's (`forced_ending`), and a server need not decode it."""
        events = (self.forced_event,) if self.forced_event is not None else self.events
        alternatives = []
        for event in events:
            contexts = [c for c in self.contexts if c.event == event and c.lines]
            # only where the event leaves one line whatever the locals: a head two contexts with
            # different lines could both match would leave the line to ask for again
            lines = frozenset(line for c in contexts for line in c.lines)
            ends_early = head_only and len(self._line_options(lines)) == 1
            bodies = [self._context_frame_regex(c, ends_early) for c in contexts]
            if bodies:
                head = "" if self.forced_event is not None else _literal(EVENT_TOKENS[event])
                alternatives.append(head + "(?:" + "|".join(bodies) + ")")
        if self.end and self.forced_event is None:
            alternatives.append("")
        return "|".join(f"(?:{a})" for a in alternatives) if alternatives else None

    def _context_frame_regex(self, ctx: FrameContext, head_only: bool) -> str:
        lines = "(?:" + "|".join(_literal(o.decode()) for o in self._line_options(frozenset(ctx.lines))) + ")"
        if ctx.event in ("call", "line"):
            head = r"\{(?:" + _context_regex(ctx) + r")\}"
            return head if head_only else head + _literal(ACTION_SEP) + lines
        return _literal(ACTION_SEP) + lines + _literal(ARG_SEP) + '"' + _CONTENT + '*"'


def _escape_byte(escape: int, byte: int) -> int | None:
    """Escape states: 1 after a backslash, 2..5 inside \\uXXXX; returns the next (0: done)."""
    if escape == 1:
        if byte not in _ESCAPES:
            return None
        return 2 if byte == ord("u") else 0
    if byte not in _HEX:
        return None
    return 0 if escape == 5 else escape + 1


def _string_byte(state: State, byte: int) -> State | None:
    """A JSON string value: ("value", phase, escape); phase 0 before the opening quote, 1 inside,
    2 after the closing one."""
    _, phase, escape = state
    if phase == 0:
        return ("value", 1, 0) if byte == _QUOTE else None
    if phase == 2:
        return None
    if escape:
        nxt = _escape_byte(escape, byte)
        return None if nxt is None else ("value", 1, nxt)
    if byte == _BACKSLASH:
        return ("value", 1, 1)
    if byte == _QUOTE:
        return ("value", 2, 0)
    return ("value", 1, 0) if is_plain(byte) else None


# -- regexes for servers -----------------------------------------------------------------------------
_METACHARACTERS = frozenset(".^$*+?{}[]|()\\")
_CONTROL_ESCAPES = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\f": "\\f", "\v": "\\v"}


def _literal(text: str) -> str:
    """`text` as a regex that matches it alone, escaping only what must be: `re.escape` also
    escapes spaces, `#`, `~`, `&`, `-` and writes a newline as a backslash and a newline, which
    vLLM's grammar engine accepts with a warning in its log per escape (per new regex)."""
    out = []
    for ch in text:
        if ch in _METACHARACTERS:
            out.append("\\" + ch)
        elif ch in _CONTROL_ESCAPES:
            out.append(_CONTROL_ESCAPES[ch])
        elif ch < " " or ch == "\x7f":
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return "".join(out)


_UNIT = r'(?:[^"\\\x00-\x1f\x7f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})'
_UNIT_NODOT = r'(?:[^"\\\x00-\x1f\x7f.]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})'
_CONTENT = _UNIT
_ANY_VALUE = r'"(?:\.\.|' + _UNIT + r'*)"'
_NEW_VALUE = r'"(?:' + _UNIT_NODOT + _UNIT + r"*|\.(?:" + _UNIT_NODOT + _UNIT + r"*)?|\.\." + _UNIT + r"+)?" + '"'


def _context_regex(ctx: FrameContext) -> str:
    """Keys in order: the shadow's (deletable ones optional), then new ones."""
    if ctx.loose:  # any keys, any order (a server's regex cannot say "each once" without blowing up)
        keys = [*ctx.shadow, *(n for n in ctx.names if n not in ctx.shadow)]
        if not keys:
            return ""
        entry = "(?:" + "|".join(_literal(json.dumps(n)) for n in keys) + "): " + _ANY_VALUE
        return f"(?:{entry}(?:, {entry})*)?"
    items: list[tuple[str, bool]] = []
    for name in ctx.shadow:
        items.append((_literal(json.dumps(name)) + ": " + _ANY_VALUE, name not in ctx.deletable))
    shadow = set(ctx.shadow)
    new = [n for n in ctx.names if n not in shadow]
    unordered = None
    if ctx.ordered:
        items += [(_literal(json.dumps(n)) + ": " + _NEW_VALUE, False) for n in new]
    elif new:
        unordered = "(?:" + "|".join(_literal(json.dumps(n)) for n in new) + "): " + _NEW_VALUE

    def tail(k: int) -> str:
        out = []
        for pattern, required in items[k:]:
            out.append(f", {pattern}" if required else f"(?:, {pattern})?")
        if unordered:
            out.append(f"(?:, {unordered})*")
        return "".join(out)

    alternatives = []
    for j, (pattern, required) in enumerate(items):
        alternatives.append(pattern + tail(j + 1))
        if required:
            break
    else:
        if unordered:
            alternatives.append(unordered + f"(?:, {unordered})*")
        alternatives.append("")  # every key optional: the empty object too
    return "|".join(f"(?:{a})" for a in alternatives)
