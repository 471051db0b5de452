"""What the README and docs/ show stays true: every code block there is marked with how it is
checked (tests/markdown_blocks.py), and each kind is checked here, in seconds:

- `shell`: each command line. `neural-dap ...` (also under `python -m`, `torchrun`, `accelerate
  launch`) parses with the real argument parser, the repository files it names exist; a script of
  the repository exists and takes the options shown; `npm run X` is a script of that package;
  `pytest` options are the plugin's; vLLM's options are the installed vLLM's.
- `launch` / `launch-fragment`: validates against the VS Code extension's schema (the server's keys).
- `dap` / `lua-dap`: each request is one the adapter serves, with arguments it reads.
- `mcp-config` / `mcp`: the server's command line parses; the worked transcript is replayed through
  the real tools and answers what it shows.
- `run`: a `neural-dap debug` transcript on examples/ is run, and prints what it shows.
- `picture`: the README's VS Code picture shows what the recorded run holds at that stop.
- `nvim-dap`, `emacs-dape`, `emacs-dap-mode`, `same-as FILE`, `lsp-nvim`, `lsp-eglot`: run by the
  editor tests, or the same text as the file they run; their keys and commands are checked here.
- `output`: an example of what a tool prints (no command in it).

Links between the pages (and their #anchors) must resolve, and every page of docs/ is one of the
checked pages or the design notes.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest

from neural_dap.cli.args import parse_with_program
from neural_dap.cli.main import COMMANDS
from neural_dap.dap import branch_requests, connection
from neural_dap.dap.session import DebugSession
from neural_dap.dapwire import protocol as p
from neural_dap.lsp.settings import LspSettings

from .conftest import ROOT
from .markdown_blocks import PAGES, TASK_PAGES, Block, all_blocks, blocks

PACKAGE = json.loads((ROOT / "vscode-extension" / "package.json").read_text())
LAUNCH_SCHEMA = PACKAGE["contributes"]["debuggers"][0]["configurationAttributes"]["launch"]
ADAPTER = "/path/to/neural-dap/.venv/bin/neural-dap"  # the placeholder the pages use for the executable
REPO_DIRS = ("examples/", "benchmarks/", "scripts/", "tests/", "docs/", "neural_dap/", "fuzz/", "vscode-extension/")

KINDS = {
    "shell",
    "launch",
    "launch-fragment",
    "dap",
    "lua-dap",
    "mcp",
    "mcp-config",
    "run",
    "picture",
    "nvim-dap",
    "emacs-dape",
    "emacs-dap-mode",
    "same-as",
    "lsp-nvim",
    "lsp-eglot",
    "output",
    "layers",
}
BLOCKS = all_blocks()


def of_kind(kind: str) -> list[Block]:
    found = [b for b in BLOCKS if b.kind == kind]
    assert found, f"no block is marked {kind!r}"
    return found


def ids(found: list[Block]) -> list[str]:
    return [b.where() for b in found]


# -- marks and links ----------------------------------------------------------------------------------


def test_every_block_is_marked_with_a_known_check():
    unmarked = [b.where() for b in BLOCKS if b.kind is None]
    assert unmarked == [], "mark each block with how it is checked (<!-- check: KIND -->): " + ", ".join(unmarked)
    unknown = sorted({f"{b.where()}: {b.kind}" for b in BLOCKS if b.kind not in KINDS})
    assert unknown == []


def test_every_page_of_docs_is_checked_and_the_readme_leads_to_it():
    on_disk = {path.name for path in (ROOT / "docs").glob("*.md")}
    assert on_disk - {"design-notes.md"} == set(TASK_PAGES)
    readme = (ROOT / "README.md").read_text()
    for name in TASK_PAGES:
        assert f"(docs/{name})" in readme, f"the README does not lead to docs/{name}"
    lines = len(readme.splitlines())
    assert lines <= 200, f"the README is a front page a newcomer reads in five minutes ({lines} lines)"


def _anchor(heading: str) -> str:
    text = heading.strip().lower().replace("`", "")
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {_anchor(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_links_between_the_pages_resolve(page: Path):
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+://", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target} does not exist"
        if anchor:
            assert anchor in _anchors(linked), f"{page.name}: {target}: no such heading"


# -- shell ----------------------------------------------------------------------------------------------


def parse_cli(argv: list[str]) -> argparse.Namespace:
    """`neural-dap ARGV` as the real command parses it (argparse errors fail with their message)."""
    name, rest = argv[0], argv[1:]
    assert name in COMMANDS, f"neural-dap has no command {name!r}"
    module = importlib.import_module(COMMANDS[name][0])
    parser = argparse.ArgumentParser(prog=f"neural-dap {name}")
    module.add_arguments(parser)
    # an option the command does not have would pass silently to the program: the pages show none
    known = {option for action in parser._actions for option in action.option_strings}
    ours = rest[: rest.index("--")] if "--" in rest else rest
    ours = ours[: ours.index("-m") + 2] if name == "debug" and "-m" in ours else ours
    unknown = [w.split("=")[0] for w in ours if w.startswith("--") and w.split("=")[0] not in known]
    assert unknown == [], f"neural-dap {name} has no option {unknown}"
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            if name == "debug" and "-m" in rest:  # as debug_cmd.run: everything after the module is its own
                return parser.parse_args(rest[: rest.index("-m") + 2])
            if hasattr(module, "OPTIONS_WITH_VALUE"):
                return parse_with_program(parser, rest, module.OPTIONS_WITH_VALUE)
            return parser.parse_args(rest)
    except SystemExit:
        pytest.fail(f"neural-dap {shlex.join(argv)}: {err.getvalue().strip()}")


def _repo_paths_exist(words: list[str]) -> None:
    for word in words:
        for part in word.split("="):
            if part.startswith(REPO_DIRS):
                assert list(ROOT.glob(part)) or (ROOT / part).exists(), f"{part} is not in the repository"


def _vllm_sources() -> str | None:
    spec = importlib.util.find_spec("vllm")
    if spec is None or spec.origin is None:
        return None
    base = Path(spec.origin).parent
    files = [base / "engine" / "arg_utils.py", *base.glob("config/**/*.py"), *base.glob("entrypoints/**/*.py")]
    return "\n".join(f.read_text(errors="replace") for f in files if f.is_file())


VLLM_SOURCES: list[str | None] = []


def _check_vllm(words: list[str]) -> None:
    if not VLLM_SOURCES:
        VLLM_SOURCES.append(_vllm_sources())
    sources = VLLM_SOURCES[0]
    if sources is None:
        return  # vLLM is not installed here: its options cannot be looked up
    for word in words:
        if word.startswith("--"):
            option = word[2:].split("=")[0]
            assert option in sources or option.replace("-", "_") in sources, f"vLLM has no option --{option}"


def _check_script(path: str, words: list[str]) -> None:
    script = ROOT / path
    assert script.is_file(), f"{path} is not in the repository"
    text = script.read_text()
    for word in words:
        if word.startswith("--"):
            assert word.split("=")[0] in text, f"{path} takes no option {word}"


def check_command(words: list[str], cwd: Path) -> Path:
    """One command of a shell line; answers the folder the next command runs in."""
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):  # MODEL=run/model bash ...
        _repo_paths_exist([words[0].split("=", 1)[1]])
        words = words[1:]
    head, args = words[0], words[1:]
    _repo_paths_exist(args)
    if head == "cd":
        target = cwd / args[0]
        assert target.is_dir(), f"cd {args[0]}: no such folder"
        return target
    if head == "neural-dap" or head.endswith("/neural-dap"):
        parse_cli(args)
    elif head in ("python", "python3") or head.endswith("/python"):
        if args[:2] == ["-m", "neural_dap"]:
            parse_cli(args[2:])
        elif args[:2] == ["-m", "pytest"]:
            plugin = (ROOT / "neural_dap" / "pytest_plugin.py").read_text()
            for word in args[2:]:
                if word.startswith("--"):
                    assert f'"{word}"' in plugin, f"pytest has no option {word} from neural-dap's plugin"
        elif args[:1] == ["-m"] and args[1].startswith("vllm."):
            _check_vllm(args[2:])
        else:
            _check_script(args[0], args[1:])
    elif head == "bash":
        _check_script(args[0], args[1:])
    elif head in ("torchrun", "accelerate"):
        at = args.index("-m")
        assert args[at + 1] == "neural_dap"
        parse_cli(args[at + 2 :])
    elif head == "vllm":
        assert args[0] == "serve"
        _check_vllm(args[2:])
    elif head == "npm":
        package = json.loads((cwd / "package.json").read_text())
        if args[0] == "run":
            assert args[1] in package["scripts"], f"{cwd.name}/package.json has no script {args[1]!r}"
        else:
            assert args[0] in ("ci", "install", "test"), f"npm {args[0]}?"
    elif head == "code":
        assert args[0] == "--install-extension"
        assert f"-o {args[1]}" in json.loads((cwd / "package.json").read_text())["scripts"]["package"]
    else:
        pytest.fail(f"no check for the command {head!r}: add one to tests/test_docs.py")
    return cwd


def shell_lines(text: str) -> list[str]:
    lines, pending = [], ""
    for line in text.splitlines():
        line = pending + line.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if line and not line.startswith("#"):
            lines.append(line.removeprefix("$ "))
    return lines


def check_shell_line(line: str) -> None:
    words = shlex.split(re.sub(r"\$(\w+)", "0", line), comments=True)  # $I: a value of the shell's
    cwd = ROOT
    command: list[str] = []
    for word in [*words, "&&"]:
        if word == "&&":
            cwd = check_command(command, cwd)
            command = []
        else:
            command.append(word)


@pytest.mark.parametrize("block", of_kind("shell"), ids=ids(of_kind("shell")))
def test_shell_commands_are_real(block: Block):
    for line in shell_lines(block.text):
        check_shell_line(line)


def test_the_readme_commands_are_the_ones_ci_runs():
    first = blocks(ROOT / "README.md")[0]
    assert first.kind == "shell"
    setup, tests = shell_lines(first.text)
    ci = (ROOT / ".ci" / "run").read_text()
    assert setup.startswith("bash scripts/setup.sh && ") and "\nbash scripts/setup.sh\n" in ci
    assert tests == ".venv/bin/python -m pytest" and ci.rstrip().endswith("\n" + tests)


# -- launch configurations ------------------------------------------------------------------------------


def _validate(config: dict) -> None:
    schema = {
        **LAUNCH_SCHEMA,
        "properties": {
            **LAUNCH_SCHEMA["properties"],
            "type": {"const": "neural-python"},
            "request": {"const": "launch"},
            "name": {"type": "string"},
        },
        "required": ["type", "request", "name"],
        "additionalProperties": False,
    }
    jsonschema.validate(config, schema)


@pytest.mark.parametrize("block", of_kind("launch"), ids=ids(of_kind("launch")))
def test_launch_configurations_validate_against_the_extensions_schema(block: Block):
    _validate(json.loads(block.text))


@pytest.mark.parametrize("block", of_kind("launch-fragment"), ids=ids(of_kind("launch-fragment")))
def test_launch_fragments_validate_against_the_extensions_schema(block: Block):
    for key, value in json.loads("{" + block.text + "}").items():
        jsonschema.validate(value, LAUNCH_SCHEMA["properties"][key])


def test_the_editor_blocks_launch_what_the_schema_allows():
    """The Lua and Emacs configurations' launch keys, read from their text."""
    for block in of_kind("nvim-dap"):
        for table in re.findall(r"\{ type = 'neural-python'.*\}", block.text):  # one configuration a line
            config: dict[str, Any] = dict(re.findall(r"(\w+) = '([^']*)'", table))
            config |= {k: v == "true" for k, v in re.findall(r"(\w+) = (true|false)", table)}
            _validate(config)
    for kind in ("emacs-dape", "emacs-dap-mode"):
        (block,) = [b for b in of_kind(kind) if b.page.name == "README.md"]
        keys = set(re.findall(r":([a-zA-Z]+) ", block.text)) - {"dap-server-path"}
        assert keys <= set(LAUNCH_SCHEMA["properties"]) | {"type", "request", "name"}, keys
        assert block.text.count(ADAPTER) == 1


# -- DAP requests ---------------------------------------------------------------------------------------

ARGUMENT_STRUCTS = {
    name.removesuffix("Arguments"): cls
    for module in (p, branch_requests)
    for name, cls in vars(module).items()
    if name.endswith("Arguments") and isinstance(cls, type) and issubclass(cls, msgspec.Struct)
}


def check_request(command: str, arguments: dict[str, Any], values: bool = True) -> None:
    assert connection._is_command(command)
    assert hasattr(DebugSession, "on_" + connection._snake(command)), f"the adapter serves no {command!r}"
    struct = ARGUMENT_STRUCTS.get(command[0].upper() + command[1:])
    if struct is None:
        return  # a request whose arguments the adapter reads field by field (DAP's own)
    fields = {f.encode_name for f in msgspec.structs.fields(struct)}
    assert set(arguments) <= fields, f"{command}: {sorted(set(arguments) - fields)} are not its arguments"
    if values:
        msgspec.convert(arguments, struct)


@pytest.mark.parametrize("block", of_kind("dap"), ids=ids(of_kind("dap")))
def test_dap_requests_are_served_with_the_arguments_shown(block: Block):
    requests = [json.loads(line) for line in block.text.splitlines() if line.startswith('{"command"')]
    assert requests
    for request in requests:
        check_request(request["command"], request.get("arguments", {}))


@pytest.mark.parametrize("block", of_kind("lua-dap"), ids=ids(of_kind("lua-dap")))
def test_lua_helpers_send_requests_the_adapter_serves(block: Block):
    sent = re.findall(r"request\('(\w+)', \{([^}]*)\}", block.text)
    assert sent
    for command, table in sent:
        check_request(command, dict.fromkeys(re.findall(r"(\w+) =", table)), values=False)


# -- MCP ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("block", of_kind("mcp-config"), ids=ids(of_kind("mcp-config")))
def test_mcp_configurations_start_the_server(block: Block):
    for server in json.loads(block.text)["mcpServers"].values():
        assert server["command"] == ADAPTER
        assert parse_cli(server["args"]).root


def _scalars(value: Any) -> set[tuple[str, str]]:
    """Every (key, value) pair of a string or number, at any depth."""
    found: set[tuple[str, str]] = set()
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (str, int, float)) and not isinstance(item, bool):
                found.add((key, str(item)))
            found |= _scalars(item)
    elif isinstance(value, list):
        for item in value:
            found |= _scalars(item)
    return found


async def test_the_worked_mcp_transcript_is_what_the_tools_answer():
    pytest.importorskip("mcp", reason="the mcp extra is not installed: pip install -e '.[mcp]'")
    from mcp import Client

    from neural_dap.mcp.server import build

    (block,) = of_kind("mcp")
    server, sessions = build(str(ROOT / "benchmarks" / "agent_programs"))
    try:
        async with Client(server) as client:
            tools = {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}
            answer: dict[str, Any] = {}
            shown = ""
            for line in [*block.text.splitlines(), "→ end"]:
                if line.startswith("→"):
                    for key, value in re.findall(r'"(\w+)": ("(?:[^"\\]|\\.)*"|-?\d+)', shown):
                        assert (key, str(json.loads(value))) in _scalars(answer), f"{key}: {value} is not answered"
                    shown = ""
                if line.startswith("→ end"):
                    break
                if line.startswith("→"):
                    name, _, text = line[1:].strip().partition(" ")
                    arguments = json.loads(text)
                    assert name in tools, f"the MCP server has no tool {name!r}"
                    assert set(arguments) <= set(tools[name]["properties"]), name
                    result = await client.call_tool(name, arguments)
                    assert not result.is_error, result.content
                    answer = result.structured_content or {}
                else:
                    shown += line + "\n"
    finally:
        await sessions.close_all()


# -- transcripts that run -------------------------------------------------------------------------------


def _debug(line: str) -> list[str]:
    argv = shlex.split(line)
    assert argv[0] == "neural-dap" and argv[1] == "debug", line
    run = subprocess.run(
        [sys.executable, "-m", "neural_dap", *argv[1:]],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return [text.rstrip() for text in run.stdout.splitlines()]


@pytest.mark.parametrize("block", of_kind("run"), ids=ids(of_kind("run")))
def test_terminal_transcripts_print_what_they_show(block: Block):
    first, *shown = block.text.splitlines()
    assert first.startswith("$ neural-dap debug examples/")
    printed = iter(_debug(first.removeprefix("$ ")))
    for line in shown:  # in order, each shown line is a printed line (lines between may be left out)
        assert any(text == line.rstrip() for text in printed), f"not printed (in this order): {line!r}"


def test_the_readme_picture_shows_the_recorded_run():
    (picture,) = of_kind("picture")
    printed = "\n".join(
        _debug('neural-dap debug examples/inventory.py --do "b 27; c; c; where; history value; p value * 2"')
    )
    first = "(unset) → 0   by `value = 0` @48 inventory.py:25 in total; seen from @49 (call 1)"
    second = "0 → 8   by `value += item.price * item.quantity` @50"
    facts = {  # what the picture shows: what the terminal prints at the same stop
        "self = <__main__.Inventory object>": "self = <__main__.Inventory object>",
        "value = 8": "| item = Item(name='book', price=12, quantity=1)   value = 8",
        "item = Item(name='book', price=12, …)": "item = Item(name='book', price=12, quantity=1)",
        "●▶27              value += item.price * item.quantity": "27 |             value += item.price * item.quantity",
        "total     inventory.py:27": "> total at inventory.py:27",
        "main      inventory.py:36": "main at inventory.py:36",
        "<module>  inventory.py:40": "<module> at inventory.py:40",
        "> value * 2\n": "(nd) p value * 2\n16",
        "line 25: (not set) → 0     inventory.py · in total (call 1) · event 48": first,
        "by value += item.price * item.quantity": second,
        "line 27: 0 → 8             inventory.py · in total (call 1) · event 50": "@50 inventory.py:27 in total",
    }
    for shown, fact in facts.items():
        assert shown in picture.text, f"the picture no longer shows {shown!r}: update this test"
        assert fact in printed, f"the recorded run does not hold {fact!r}"


# -- what the editor tests run --------------------------------------------------------------------------


@pytest.mark.parametrize("block", of_kind("same-as"), ids=ids(of_kind("same-as")))
def test_helpers_are_the_text_their_editor_test_runs(block: Block):
    mark = re.search(r"<!--\s*check:\s*same-as\s+(\S+)", block.page.read_text().splitlines()[block.line - 2])
    assert mark, f"{block.where()}: same-as names the file"
    ran = {line.strip() for line in (ROOT / mark.group(1)).read_text().splitlines()}
    for line in block.text.splitlines():
        assert not line.strip() or line.strip() in ran, f"{mark.group(1)} does not run: {line.strip()!r}"


def test_the_editor_blocks_are_run_by_their_editor_tests():
    for kind, test in (
        ("nvim-dap", "test_nvim_dap.py"),
        ("emacs-dape", "test_emacs.py"),
        ("emacs-dap-mode", "test_emacs.py"),
    ):
        assert [b.page.name for b in of_kind(kind)] == ["README.md"]
        assert f'"{kind}"' in (ROOT / "tests" / test).read_text(), f"tests/{test} does not run the {kind} block"


def test_the_language_server_configurations_start_it_with_its_settings():
    (nvim,) = of_kind("lsp-nvim")
    cmd = re.search(r"cmd = \{ '([^']+)', '(\w+)' \}", nvim.text)
    assert cmd and cmd.group(1) == ADAPTER
    parse_cli([cmd.group(2)])
    settings = {f.encode_name for f in msgspec.structs.fields(LspSettings)}
    options = re.search(r"init_options = \{([^}]*)\}", nvim.text)
    assert options and set(re.findall(r"(\w+) =", options.group(1))) <= settings
    (eglot,) = of_kind("lsp-eglot")
    command = re.search(r'\("([^"]+)" "(\w+)"\)', eglot.text)
    assert command and command.group(1) == ADAPTER
    parse_cli([command.group(2)])


# -- the house -------------------------------------------------------------------------------------------


def test_the_architecture_page_draws_the_layers_ci_enforces():
    """docs/architecture.md's diagram lists, top to bottom, the layers of the import-linter contract
    in pyproject.toml (what `lint-imports` checks in CI)."""
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in config["contracts"] if c["type"] == "layers"]
    (block,) = of_kind("layers")
    drawn = [line.split("  ")[0].strip() for line in block.text.splitlines() if line.strip()]
    assert drawn == contract["layers"]
