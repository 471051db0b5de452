"""Can the MCP tools lead an agent to the line that made a bug? A scripted policy, no model.

Run: python benchmarks/agent_tools.py [--json] [--only NAME ...]

`benchmarks/agent_programs/` holds small buggy programs written for this (wrong output, an
exception, off-by-one, a mutated default argument, aliasing, ...), each with its known buggy line
(`PROGRAMS` below: a piece of that line's text, and for a wrong output the expression a user would
see is wrong). A fixed policy uses only the tools, through the SDK's in-memory client, exactly as an
agent would call them over stdio:

  record -> goto exception (if the run raised) or goto end
  -> pick the suspect: at an exception, the operand its type points at (the index of an IndexError
     or KeyError, the divisor of a ZeroDivisionError, the None of a TypeError or AttributeError; at
     an explicit `raise`, the names of the condition one step back; of several, the one changed
     last); at a wrong output, the expression that is wrong
  -> the origin chain: last_value says which statement last changed it; a copy (`x = y`, `return y`,
     `for x in y`) is followed to y, a call's result into the callee's `return` (step_back_in), an
     argument to the caller's expression (a parameter left to its default names the `def` line), an
     in-place change of a parameter back to where its object came from; the first statement that
     computes the value is the answer.

It reports how often the named line is the buggy one, the number of tool calls, and each tool's
median latency. Apart from the policy, it measures the origin chain alone: at the same stop and for
the same suspect, one `value_origin` call; the program counts when one of the chain's steps is the
buggy line (and, separately, when the question was asked at that line already).

What it does not show: how a model would do (a model reads the source and the values, and can
judge that a computation is wrong or right; the policy cannot, so it stops at the first
computation); and the programs are small and were written for this, with one bug each.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import anyio
from mcp import Client

from neural_dap.mcp.server import build

FOLDER = Path(__file__).resolve().parent / "agent_programs"

# program: (the buggy line's text, the wrong expression at the end; None where the run raises)
PROGRAMS: dict[str, tuple[str, str | None]] = {
    "off_by_one_index": ("for i in range(len(xs) + 1):", None),
    "off_by_one_slice": ("start = len(xs) - n + 1", "window"),
    "wrong_accumulator": ("total = total - 1", "result"),
    "mutable_default": ("def add_tag(tag, tags=[]):", "second"),
    "divide_by_empty": ("return total / len(xs)", None),
    "wrong_operator": ("return width + height", "result"),
    "key_typo": ('order = [("apple", 2), ("paer", 1)]', None),
    "none_return": ("user = find(users, name.upper())", None),
    "aliased_rows": ("grid = [[0] * n] * n", "result"),
    "shared_list": ("evens = odds = []", "evens"),
    "wrong_initial": ("p = 0", "result"),
    "integer_division": ("return sum(xs) // len(xs)", "result"),
    "swapped_args": ("out.append(power(2, k))", "result"),
    "wrong_condition": ("if s > threshold:", "result"),
    "string_concat": ('amount = line.split(",")[1]', None),
    "stale_variable": ("return x", "result"),
    "wrong_index_constant": ("return ordered[1]", "result"),
    "discount_twice": ("total = apply_discount(total, rate)", "result"),
    "missing_reset": ("s = 0", "result"),
    "bad_default_param": ("def scale(values, factor=0):", "result"),
    "attribute_none": ("self.history = None", None),
    "recursion_base": ("return 0", "result"),
    "explicit_raise": ("balance = withdraw(balance, fee * 10)", None),
    # the kinds an agent met while trying the server (issue 39), added before the origin work
    "sliding_window": ("for i in range(len(xs) - k):", "result"),
    "cached_settings": ('settings["timeout"] = 1', "result[0]"),
    "ledger_sign": ('sign = 1 if kind == "deposit" else 1', "result"),
    "recursion_none": ("return", None),
    "undo_alias": ("self.history.append(self.lines)", "result"),
    "sort_key_types": ('rows.append({"name": name, "score": score})', "result"),
    "generator_twice": ("return (int(line) for line in lines)", "result[1]"),
    "lost_update": ("self.balance + amount", "result"),
    "str_limit": ("return text.strip()", None),
    "merge_counts": ("merged[k] = v", "result"),
    "late_binding": ("fns.append(lambda x: x * k)", "result"),
}


NONE_ATTRIBUTE = re.compile(r"'NoneType' object has no attribute '(\w+)'")


class ToolFailed(Exception):
    pass


@dataclass
class Agent:
    client: Client
    latencies: dict[str, list[float]] = field(default_factory=dict)
    calls: int = 0
    here: dict[str, Any] = field(default_factory=dict)  # the last state a tool showed
    shown: set[tuple[str, int]] = field(default_factory=set)  # every (file, line) an answer pointed at

    async def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        began = time.perf_counter()
        result = await self.client.call_tool(name, arguments)
        self.latencies.setdefault(name, []).append(time.perf_counter() - began)
        self.calls += 1
        if result.is_error:
            raise ToolFailed(result.content[0].text)  # type: ignore[union-attr]
        out = result.structured_content or {}
        if "location" in out and "stack" in out:
            self.here = out
        self.shown.update(places(out))
        return out


def places(answer: Any) -> set[tuple[str, int]]:
    """The (file, line) pairs an answer points at: its locations, changed_by, origin steps."""
    found: set[tuple[str, int]] = set()
    if isinstance(answer, dict):
        if isinstance(answer.get("file"), str) and isinstance(answer.get("line"), int):
            found.add((answer["file"], answer["line"]))
        for value in answer.values():
            found |= places(value)
    elif isinstance(answer, list):
        for value in answer:
            found |= places(value)
    return found


def marked(location: dict[str, Any]) -> str:
    """The source line a location points at (the `>` line of its context)."""
    for text in location.get("source", []):
        if text.startswith(">"):
            return text.split("|", 1)[1][1:] if "|" in text else ""
    return ""


def statement(text: str) -> ast.stmt | None:
    text = text.strip()
    if text.endswith(":"):
        text += " pass"
    for candidate in (text, text.replace("elif ", "if ", 1)):
        try:
            body = ast.parse(candidate).body
            return body[0] if body else None
        except SyntaxError:
            continue
    return None


def loaded_names(node: ast.AST) -> list[str]:
    seen: list[str] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in seen:
            seen.append(n.id)
    return seen


def called_names(node: ast.AST) -> set[str]:
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            func = n.func
            out.add(func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else "")
    return out


def root_of(expression: str) -> str:
    return expression.split(".")[0].split("[")[0].strip()


class Policy:
    def __init__(self, agent: Agent, session: str) -> None:
        self.agent = agent
        self.session = session

    async def answer_here(self) -> tuple[str, int]:
        location = self.agent.here["location"]
        return location["file"], location["line"]

    async def suspects_at_exception(self, kind: str, message: str = "") -> list[str]:
        agent = self.agent
        text = marked(agent.here["location"])
        node = statement(text)
        if isinstance(node, ast.Raise):  # an explicit raise: the condition that led to it
            line = agent.here["location"]["line"]
            while agent.here["location"]["line"] == line and not agent.here.get("at_start"):
                await agent.tool("step", session=self.session, action="step_back")
            node = statement(marked(agent.here["location"]))
        if node is None:
            return []
        local = set(agent.here.get("locals", {}))
        found: list[str] = []
        if kind in ("IndexError", "KeyError"):
            for n in ast.walk(node):
                if isinstance(n, ast.Subscript):
                    found += loaded_names(n.slice) or loaded_names(n.value)
        elif kind == "ZeroDivisionError":
            for n in ast.walk(node):
                if isinstance(n, ast.BinOp) and isinstance(n.op, (ast.Div, ast.FloorDiv, ast.Mod)):
                    found += loaded_names(n.right)
        elif kind == "AttributeError" and (missing := NONE_ATTRIBUTE.match(message)):
            # "'NoneType' object has no attribute 'append'": the object before `.append` is the None
            attributes = [n for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr == missing[1]]
            found += [ast.unparse(n.value) for n in attributes]
        if not found and kind in ("AttributeError", "TypeError"):
            paths = [ast.unparse(n.value) for n in ast.walk(node) if isinstance(n, (ast.Attribute, ast.Subscript))]
            for expression in dict.fromkeys([*paths, *loaded_names(node)]):
                if root_of(expression) in local:
                    try:
                        value = await agent.tool("evaluate", session=self.session, expression=expression)
                    except ToolFailed:
                        continue
                    if value["value"] == "None":
                        found.append(expression)
        if not found:
            found = loaded_names(node if not isinstance(node, (ast.If, ast.While)) else node.test)
        return [e for e in dict.fromkeys(found) if root_of(e) in local]

    async def most_recent(self, suspects: list[str]) -> tuple[str, dict[str, Any]] | None:
        """Of several suspects, the one whose value changed last (and that answer, kept)."""
        best = None
        for expression in suspects:
            try:
                last = await self.agent.tool("last_value", session=self.session, expression=expression)
            except ToolFailed:
                continue
            moment = int(last["moment"][1:]) if last.get("changed") else -1
            if best is None or moment > best[0]:
                best = (moment, expression, last)
        return (best[1], best[2]) if best is not None else None

    async def origin(self, expression: str, last: dict[str, Any] | None = None, hops: int = 10) -> tuple[str, int]:
        agent, session = self.agent, self.session
        for _ in range(hops):
            if last is None:
                last = await agent.tool("last_value", session=session, expression=expression)
            by = last.get("changed_by") or last.get("passed_by")
            if not last.get("changed") or by is None:
                return await self.answer_here()
            answer = (by["file"], by["line"])
            here_function = agent.here["location"]["function"]
            if last.get("argument") or by["function"] != here_function:
                # bound as an argument: the caller's expression for this parameter
                found = await self.argument(last, by, expression)
                if found is None:
                    return answer
                if isinstance(found, tuple):
                    return found
                expression, last = found, None
                continue
            node = statement(marked(by))
            root = root_of(expression)
            if isinstance(node, ast.For) and root in loaded_names(node.target) + [
                t.id for t in ast.walk(node.target) if isinstance(t, ast.Name)
            ]:
                if isinstance(node.iter, ast.Name):  # `for x in xs`: x comes from xs
                    await agent.tool("goto", session=session, where=by["moment"])
                    expression, last = node.iter.id, None
                    continue
                return answer
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                stores = {t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)}
                plain = all(isinstance(t, ast.Name) for t in targets)
                itself = expression in {ast.unparse(t) for t in targets}
                if ((root in stores and plain) or itself) and node.value is not None:
                    if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):  # a copy
                        await agent.tool("goto", session=session, where=by["moment"])
                        expression, last = node.value.id, None
                        continue
                    if called_names(node.value):  # the value came out of a call: into its return
                        suffix = expression[len(root) :]
                        followed = await self.into_call(last["moment"], called_names(node.value), answer, suffix)
                        if isinstance(followed, str):
                            expression, last = followed, None
                            continue
                        return followed
                    return answer
            if root in loaded_names(node) if node is not None else False:
                # changed in place (xs.append(...), xs[0] = ...): where did the object come from?
                await agent.tool("goto", session=session, where=by["moment"])
                before = await agent.tool("last_value", session=session, expression=root)
                if before.get("changed") and before.get("argument"):
                    found = await self.argument(before, before["passed_by"], root)
                    if isinstance(found, tuple):
                        return found
                return answer
            return answer
        return await self.answer_here()

    async def into_call(
        self, moment: str, names: set[str], answer: tuple[str, int], suffix: str = ""
    ) -> tuple[str, int] | str:
        """From the moment after a statement that called a function, back into that call's return:
        the name it returned (to follow), or the line that computed it. A class called is its
        `__init__`, whose `self` is the object made."""
        agent, session = self.agent, self.session
        if any(n[:1].isupper() for n in names):
            names = names | {"__init__"}
        await agent.tool("goto", session=session, where=moment)
        state = await agent.tool("step", session=session, action="step_back_in")
        while state["event"] == "return" and state["location"]["function"] in names:
            if state["location"]["function"] == "__init__":
                return "self" + suffix
            node = statement(marked(state["location"]))
            if not isinstance(node, ast.Return) or node.value is None:
                return answer  # it fell off its end: the call's arguments were wrong
            if isinstance(node.value, ast.Name):
                return node.value.id + suffix
            inner = called_names(node.value)
            if isinstance(node.value, ast.Call) and inner:
                state = await agent.tool("step", session=session, action="step_back_in")
                names = inner
                continue
            return state["location"]["file"], state["location"]["line"]
        return answer

    async def argument(self, last: dict[str, Any], by: dict[str, Any], parameter: str) -> str | tuple[str, int] | None:
        """A parameter bound at a call: the caller's argument expression (a name to follow), the
        `def` line when the call left it to its default, or None (name the call's line)."""
        agent, session = self.agent, self.session
        call = await agent.tool("goto", session=session, where=last["moment"])  # the call event
        definition = statement(marked(call["location"]))
        callee = call["location"]["function"]
        site = statement(marked(by))
        if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)) or site is None:
            return None
        params = [a.arg for a in definition.args.posonlyargs + definition.args.args]
        suffix = parameter[len(root_of(parameter)) :]
        parameter = root_of(parameter)
        for node in ast.walk(site):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
            if name != callee:
                continue
            method = params and params[0] in ("self", "cls") and isinstance(node.func, ast.Attribute)
            offset = 1 if method else 0
            position = params.index(parameter) - offset if parameter in params else -1
            given = next((k.value for k in node.keywords if k.arg == parameter), None)
            if method and parameter == params[0] and isinstance(node.func, ast.Attribute):
                given = node.func.value  # the receiver: acct.deposit(10) binds self to acct
            if given is None and 0 <= position < len(node.args):
                given = node.args[position]
            if given is None:
                return call["location"]["file"], call["location"]["line"]  # left to its default
            if isinstance(given, ast.Name):
                await agent.tool("goto", session=session, where=by["moment"])
                return given.id + suffix
            return None
        return None


async def diagnose(agent: Agent, name: str, wrong: str | None) -> tuple[str, int] | None:
    run = await agent.tool("record", program=f"{name}.py")
    policy = Policy(agent, run["session"])
    try:
        if "exception" in run:
            await agent.tool("goto", session=run["session"], where="exception")
            suspects = await policy.suspects_at_exception(run["exception"]["type"], run["exception"]["message"])
            chosen = await policy.most_recent(suspects) if suspects else None
            if chosen is None:
                return await policy.answer_here()
            expression, last = chosen
            # last_value moved nothing: ask again from the exception (the suspects' answers were there)
            await agent.tool("goto", session=run["session"], where="exception")
            return await policy.origin(expression, last)
        await agent.tool("goto", session=run["session"], where="end")
        return await policy.origin(wrong or "result")
    except ToolFailed as exc:
        print(f"  {name}: a tool failed: {exc}", file=sys.stderr)
        return None
    finally:
        await agent.tool("close", session=run["session"])


async def origin_alone(agent: Agent, name: str, wrong: str | None) -> tuple[tuple[str, int], list[tuple[str, int]]]:
    """What one `value_origin` answer alone shows: record, go to the exception or the end, pick the
    suspect as the policy does, ask value_origin once. (where it was asked, the lines its steps name)."""
    run = await agent.tool("record", program=f"{name}.py")
    session = run["session"]
    policy = Policy(agent, session)
    try:
        if "exception" in run:
            await agent.tool("goto", session=session, where="exception")
            suspects = await policy.suspects_at_exception(run["exception"]["type"], run["exception"]["message"])
            chosen = await policy.most_recent(suspects) if suspects else None
            await agent.tool("goto", session=session, where="exception")
            expression = chosen[0] if chosen is not None else None
        else:
            await agent.tool("goto", session=session, where="end")
            expression = wrong or "result"
        location = agent.here["location"]
        asked = (location["file"], location["line"])
        if expression is None:
            return asked, []
        origin = await agent.tool("value_origin", session=session, expression=expression)
        return asked, [(step["file"], step["line"]) for step in origin["steps"]]
    except ToolFailed as exc:
        print(f"  {name}: a tool failed: {exc}", file=sys.stderr)
        return ("", 0), []
    finally:
        await agent.tool("close", session=session)


def bug_line(name: str) -> int:
    text = PROGRAMS[name][0]
    lines = (FOLDER / f"{name}.py").read_text().splitlines()
    found = [k for k, line in enumerate(lines, 1) if line.strip() == text]
    assert len(found) == 1, (name, text, found)
    return found[0]


async def main(only: list[str], as_json: bool) -> int:
    server, sessions = build(str(FOLDER))
    rows: list[dict[str, Any]] = []
    try:
        async with Client(server) as client:
            agent = Agent(client)
            for name, (_text, wrong) in PROGRAMS.items():
                if only and name not in only:
                    continue
                before = agent.calls
                agent.shown = set()
                named = await diagnose(agent, name, wrong)
                calls = agent.calls - before
                line = bug_line(name)
                bug = (f"{name}.py", line)
                hit = named is not None and named[1] == line and named[0] == f"{name}.py"
                reached = bug in agent.shown
                before = agent.calls
                asked, chain = await origin_alone(agent, name, wrong)
                rows.append(
                    {
                        "program": name,
                        "bug": line,
                        "named": named[1] if named else None,
                        "hit": hit,
                        "reached": reached,
                        "calls": calls,
                        "origin_calls": agent.calls - before - 1,  # (not counting its close)
                        "origin_lines": [at for file, at in chain if file == bug[0]],
                        "origin_hit": bug in chain,
                        "origin_hit_or_asked_there": bug in chain or asked == bug,
                    }
                )
    finally:
        await sessions.close_all()
    hits = sum(r["hit"] for r in rows)
    reached_count = sum(r["reached"] for r in rows)
    origin_hits = sum(r["origin_hit"] for r in rows)
    origin_there = sum(r["origin_hit_or_asked_there"] for r in rows)
    latency = {tool: round(statistics.median(v) * 1000, 1) for tool, v in sorted(agent.latencies.items())}
    summary = {
        "programs": len(rows),
        "named_the_buggy_line": hits,
        "accuracy": round(hits / len(rows), 3) if rows else 0.0,
        "tool_calls_median": statistics.median(r["calls"] for r in rows) if rows else 0,
        "tool_calls_total": sum(r["calls"] for r in rows),
        "policy_reached_the_buggy_line": reached_count,
        "origin_chain_reached": origin_hits,
        "origin_chain_reached_or_asked_there": origin_there,
        "origin_chain_calls_median": statistics.median(r["origin_calls"] for r in rows) if rows else 0,
        "median_latency_ms": latency,
    }
    if as_json:
        print(json.dumps({"rows": rows, "summary": summary}, indent=1))
        return 0
    print(f"{'program':<22} {'bug':>4} {'named':>6} {'calls':>6}  policy  origin chain (lines)")
    for r in rows:
        lines = " ".join(map(str, r["origin_lines"]))
        policy, origin = "ok" if r["hit"] else "MISS", "ok" if r["origin_hit"] else "MISS"
        shown = r["named"] or "-"
        print(f"{r['program']:<22} {r['bug']:>4} {shown:>6} {r['calls']:>6}  {policy:<6}  {origin:<4} ({lines})")
    print(
        f"\nthe policy named the buggy line: {hits}/{len(rows)} ({summary['accuracy']:.0%}); an answer it got "
        f"showed the line: {reached_count}/{len(rows)}; tool calls per program: median {summary['tool_calls_median']}, "
        f"total {summary['tool_calls_total']}"
    )
    print(
        f"the origin chain alone (one value_origin at the exception or end) passed the buggy line: "
        f"{origin_hits}/{len(rows)}; or it was asked there: {origin_there}/{len(rows)}; "
        f"tool calls: median {summary['origin_chain_calls_median']}"
    )
    print("median latency per tool (ms): " + ", ".join(f"{k} {v}" for k, v in latency.items()))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print the rows and the summary as JSON")
    parser.add_argument("--only", nargs="*", default=[], help="run only these programs")
    opts = parser.parse_args()
    raise SystemExit(anyio.run(main, opts.only, opts.json))
