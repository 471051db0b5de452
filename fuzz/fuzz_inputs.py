"""Fuzz what reaches neural-dap from outside: DAP bytes, user expressions, model text, recorded reprs.

    .venv/bin/python fuzz/fuzz_inputs.py                  # all targets, the full run (minutes)
    .venv/bin/python fuzz/fuzz_inputs.py --examples 200 adapter-tcp evaluator

Targets:
  adapter-stdio, adapter-tcp  generated DAP byte streams and message sequences against a live
                              `neural-dap adapter` process (valid requests, broken frames, random
                              bytes, hostile expressions); after every stream the adapter must still
                              answer `initialize` on a fresh connection (TCP) and within the timeout
  evaluator                   generated expressions against the watch / condition evaluator: only
                              a value or an EvaluationError, within its time budget
  parsers                     generated text against the trace-format parser and `parse_repr`:
                              only a State, EndOfTrace or FormatError; never an allocation larger
                              than the text

Each target prints: examples, messages sent, crashes, hangs, and the adapter's peak memory. The
tests run a short version of each (`tests/test_fuzz.py`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import time
import tracemalloc
from dataclasses import dataclass, field

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from neural_dap.core.evaluator import EvaluationError, evaluate
from neural_dap.core.reprs import parse_repr, show
from neural_dap.core.source import SourceInfo
from neural_dap.core.state import State
from neural_dap.format.tokens import ALL_SPECIALS
from neural_dap.format.trace import FormatError, TraceText

PROGRAM = (
    "def f(xs, n):\n    total = 0\n    for x in xs:\n        total += x * n\n    return total\n\n"
    "print(f([1, 2, 3], 2))\n"
)


@dataclass
class Report:
    target: str
    examples: int = 0
    messages: int = 0
    crashes: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    peak_kib: int = 0

    def line(self) -> str:
        return (
            f"{self.target:14s} examples {self.examples:6d}  messages {self.messages:7d}  "
            f"crashes {len(self.crashes)}  hangs {len(self.hangs)}"
            + (f"  adapter peak {self.peak_kib / 1024:.1f} MiB" if self.peak_kib else "")
        )


# -- strategies ----------------------------------------------------------------------------------------

EXPRESSION_ATOMS = [
    "xs",
    "n",
    "total",
    "s",
    "d",
    "1",
    "0",
    "-1",
    "10**9",
    "2**64",
    "'ab'",
    "b'a'",
    "[1, 2]",
    "(1,)",
    "{}",
    "{'a': 1}",
    "None",
    "True",
    "1.5",
    "'%d'",
    "'\\t'",
    "''",
]
BINOPS = ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "|", "&", "^", " and ", " or ", " < ", " == ", " in "]
CALLS = [
    "len({})",
    "sum({})",
    "sorted({})",
    "str({})",
    "repr({})",
    "list({})",
    "range({})",
    "round({}, -10**6)",
    "max({})",
    "{}.upper()",
    "{}.center(10**8)",
    "{}.replace('', 'xx')",
    "'-'.join({})",
    "{}.expandtabs(10**7)",
    "{}.zfill(10**9)",
    "{}.decode('nope')",
    "[{} for _ in range(10**6)]",
    "{}[::-1]",
    "{}[10**9]",
    "{}.get('a')",
    "f'{{{}}}'",
    "({} * 10**5)",
    "int({})",
    "chr({})",
    "dict({})",
    "zip({}, {})",
    "isinstance({})",
    "type({})",
    "{}.__class__",
    "__import__('os')",
]


def expressions(depth: int = 3) -> st.SearchStrategy[str]:
    base = st.sampled_from(EXPRESSION_ATOMS)

    def extend(inner):
        return st.one_of(
            st.tuples(inner, st.sampled_from(BINOPS), inner).map(lambda t: f"({t[0]}{t[1]}{t[2]})"),
            st.tuples(st.sampled_from(CALLS), inner).map(lambda t: t[0].replace("{}", t[1])),
            st.tuples(inner, inner).map(lambda t: f"[{t[0]}, {t[1]}]"),
            inner.map(lambda e: f"not {e}"),
        )

    return st.recursive(base, extend, max_leaves=12) | st.text(max_size=60)


FRAGMENTS = [str(t) for t in ALL_SPECIALS] + [
    '{"x": ".."}',
    '{"xs": "[1, 2]"}',
    '"',
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "..",
    "    total += x * n\n",
    "    return total\n",
    "def f(xs, n):\n",
    '"6"',
    "\\u0000",
    "\n",
    " ",
    "x",
    "[" * 50,
    "{" * 50,
]


def model_texts() -> st.SearchStrategy[str]:
    return st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=20), max_size=30).map("".join)


def reprs() -> st.SearchStrategy[str]:
    shapes = [
        "bytearray({})",
        "set({})",
        "frozenset({})",
        "Point(x={}, y={})",
        "<Foo object>",
        "[{}, {}]",
        "({},)",
        "{{{}: {}}}",
        "{}+{}j",
        "-{}",
        "nan",
        "inf",
        "'{}'",
        "b'{}'",
        "defaultdict(<class 'int'>, {{}})",
        "{}…",
    ]
    atoms = st.sampled_from(
        ["0", "1", "200000000", "10**100", "'a'", "None", "True", "()", "[]", "{}", "1e308", "(" * 40]
    )
    return st.recursive(
        atoms,
        lambda inner: st.tuples(st.sampled_from(shapes), inner, inner).map(
            lambda t: t[0].replace("{}", t[1], 1).replace("{}", t[2], 1)
        ),
        max_leaves=8,
    ) | st.text(max_size=40)


def frames() -> st.SearchStrategy[bytes]:
    def frame(body: bytes) -> bytes:
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    request = st.fixed_dictionaries(
        {
            "seq": st.integers(-5, 10**6) | st.none(),
            "type": st.sampled_from(["request", "response", "event", "x"]),
            "command": st.sampled_from(
                [
                    "initialize",
                    "launch",
                    "setBreakpoints",
                    "configurationDone",
                    "next",
                    "stepBack",
                    "continue",
                    "evaluate",
                    "variables",
                    "threads",
                    "disconnect",
                    "pause",
                    "cancel",
                    "x",
                ]
            ),
            "arguments": st.one_of(
                st.none(),
                st.dictionaries(
                    st.sampled_from(
                        [
                            "program",
                            "expression",
                            "frameId",
                            "variablesReference",
                            "threadId",
                            "breakpoints",
                            "source",
                            "limits",
                            "entry",
                            "world",
                            "noDebug",
                            "stopOnEntry",
                        ]
                    ),
                    st.one_of(
                        st.integers(-3, 10**9),
                        st.text(max_size=20),
                        st.booleans(),
                        expressions(),
                        st.just({"maxEvents": 10**15}),
                    ),
                    max_size=4,
                ),
            ),
        }
    )
    valid = request.map(lambda m: frame(json.dumps({k: v for k, v in m.items() if v is not None}).encode()))
    broken = st.sampled_from(
        [
            b"Content-Length: 99999999999\r\n\r\n",
            b"Content-Length: -1\r\n\r\n",
            b"X: 1\r\n\r\n",
            b"POST / HTTP/1.1\r\n\r\n",
            b"Content-Length: 5\r\n\r\n{",
            b"\x00\xff" * 10,
        ]
    )
    return st.lists(valid | broken | st.binary(max_size=64), min_size=1, max_size=12).map(b"".join)


# -- targets ---------------------------------------------------------------------------------------------


def fuzz_evaluator(examples: int) -> Report:
    report = Report("evaluator")
    names = {"xs": "[1, 2, 3]", "n": "4", "total": "10", "s": "'hello'", "d": "{'a': 1}"}

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(expressions())
    def run(expression: str) -> None:
        report.examples += 1
        started = time.monotonic()
        try:
            value = evaluate(expression, names)
            show(value)
        except EvaluationError:
            pass
        except BaseException as exc:
            report.crashes.append(f"{expression!r}: {type(exc).__name__}: {exc}")
        if time.monotonic() - started > 2.0:
            report.hangs.append(f"{expression!r}: {time.monotonic() - started:.1f} s")

    run()
    return report


def fuzz_parsers(examples: int) -> Report:
    report = Report("parsers")
    source = SourceInfo(PROGRAM)

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(model_texts(), reprs())
    def run(text: str, repr_text: str) -> None:
        report.examples += 1
        trace = TraceText("nd", source, 1)
        trace.append(State("call", 1, "def f(xs, n):", "f", 0, 0, {"xs": "[1, 2]", "n": "3"}))
        try:
            trace.parse(text, closest_line=True)
        except FormatError:
            pass
        except BaseException as exc:
            report.crashes.append(f"parse {text!r}: {type(exc).__name__}: {exc}")
        tracemalloc.start()
        try:
            parse_repr(repr_text)
        except BaseException as exc:
            report.crashes.append(f"parse_repr {repr_text!r}: {type(exc).__name__}: {exc}")
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        if peak > 64 * len(repr_text) + 2_000_000:
            report.crashes.append(f"parse_repr {repr_text!r} allocated {peak} bytes")

    run()
    return report


def _peak_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _initialize_answers(port: int) -> bool:
    body = json.dumps(
        {"seq": 1, "type": "request", "command": "initialize", "arguments": {"adapterID": "fuzz"}}
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        data = b""
        while b'"command":"initialize"' not in data.replace(b" ", b""):
            chunk = sock.recv(65536)
            if not chunk:
                return False
            data += chunk
    return True


def fuzz_adapter(examples: int, transport: str, program_dir: str) -> Report:
    report = Report(f"adapter-{transport}")
    program = os.path.join(program_dir, "fuzzed_program.py")
    with open(program, "w") as fh:
        fh.write(PROGRAM)
    hello = [
        json.dumps({"seq": 1, "type": "request", "command": "initialize", "arguments": {"adapterID": "fuzz"}}).encode(),
        json.dumps(
            {
                "seq": 2,
                "type": "request",
                "command": "launch",
                "arguments": {"program": program, "stopOnEntry": True, "limits": {"maxEvents": 2000}},
            }
        ).encode(),
        json.dumps({"seq": 3, "type": "request", "command": "configurationDone"}).encode(),
    ]
    prefix = b"".join(b"Content-Length: %d\r\n\r\n" % len(b) + b for b in hello)
    command = [sys.executable, "-m", "neural_dap", "adapter"]
    server = None
    port = 0
    if transport == "tcp":
        server = subprocess.Popen(
            [*command, "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT
        )
        port = int(server.stdout.readline().decode().rsplit(":", 1)[-1])  # type: ignore[union-attr]

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(frames(), st.booleans())
    def run(stream: bytes, introduce: bool) -> None:
        report.examples += 1
        data = (prefix if introduce else b"") + stream
        report.messages += data.count(b"Content-Length") or 1
        if transport == "tcp":
            assert server is not None
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
                    sock.sendall(data)
                    sock.shutdown(socket.SHUT_WR)
                    deadline = time.monotonic() + 15
                    while time.monotonic() < deadline and sock.recv(65536):
                        pass
            except OSError:
                pass
            if server.poll() is not None:
                report.crashes.append(f"the adapter exited ({server.returncode}) after {data[:200]!r}")
                raise SystemExit(1)
            if not _initialize_answers(port):
                report.hangs.append(f"no answer to initialize after {data[:200]!r}")
            report.peak_kib = max(report.peak_kib, _peak_kib(server.pid))
            return
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT
        )
        try:
            _, err = process.communicate(data, timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            _out, err = process.communicate()
            report.hangs.append(f"no exit 30 s after its input closed: {data[:200]!r}")
            return
        # a traceback the adapter printed (a log line quoting fuzzed bytes that spell "Traceback" is not one)
        if re.search(rb"^Traceback \(most recent call last\):", err, re.M):
            report.crashes.append(f"{data[:200]!r}: {err.decode(errors='replace')[-400:]}")

    try:
        run()
    finally:
        if server is not None:
            server.terminate()
            server.wait(10)
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("targets", nargs="*", default=["evaluator", "parsers", "adapter-tcp", "adapter-stdio"])
    parser.add_argument(
        "--examples", type=int, default=0, help="examples per target (default: 5000 / 5000 / 500 / 100)"
    )
    opts = parser.parse_args()
    import tempfile

    defaults = {"evaluator": 5000, "parsers": 5000, "adapter-tcp": 500, "adapter-stdio": 100}
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        for target in opts.targets:
            n = opts.examples or defaults[target]
            started = time.monotonic()
            if target == "evaluator":
                report = fuzz_evaluator(n)
            elif target == "parsers":
                report = fuzz_parsers(n)
            else:
                report = fuzz_adapter(n, target.split("-", 1)[1], tmp)
            print(f"{report.line()}  ({time.monotonic() - started:.0f} s)", flush=True)
            for finding in report.crashes + report.hangs:
                print("   ", finding[:500])
            failed |= bool(report.crashes or report.hangs)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
