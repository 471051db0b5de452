"""The VS Code extension: type-checks, its unit tests pass, and its schema matches the server."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import jsonschema
import msgspec
import pytest

from neural_dap.dapwire.protocol import LAUNCH_KEYS, EntryArguments
from neural_dap.lsp.settings import LspSettings
from neural_dap.world.factory import launch_keys
from neural_dap.world.neural import ModelSettings
from neural_dap.world.recorded import LIMIT_KEYS

from .conftest import ROOT

EXTENSION = ROOT / "vscode-extension"
PACKAGE = json.loads((EXTENSION / "package.json").read_text())
DEBUGGER = PACKAGE["contributes"]["debuggers"][0]
LAUNCH_SCHEMA = DEBUGGER["configurationAttributes"]["launch"]


def _npm(*args: str) -> subprocess.CompletedProcess:
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed")
    if not (EXTENSION / "node_modules" / "typescript").is_dir():
        pytest.skip("run `npm ci` in vscode-extension first (scripts/setup.sh does)")
    return subprocess.run(
        [npm, *args],
        cwd=EXTENSION,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NEURAL_DAP_PYTHON": sys.executable},
    )


def test_typescript_strict_type_check_passes():
    result = _npm("run", "typecheck")
    assert result.returncode == 0, result.stdout + result.stderr


def test_extension_unit_tests_pass_with_a_mocked_vscode():
    result = _npm("test")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert re.search(r"# fail 0", result.stdout) and re.search(r"# pass (\d+)", result.stdout)


def test_every_launch_key_of_the_server_is_in_the_schema_and_back():
    assert set(LAUNCH_SCHEMA["properties"]) == set(LAUNCH_KEYS | launch_keys())
    model = next(o for o in LAUNCH_SCHEMA["properties"]["model"]["anyOf"] if o.get("type") == "object")
    assert set(model["properties"]) == {f.encode_name for f in msgspec.structs.fields(ModelSettings)}
    entry = LAUNCH_SCHEMA["properties"]["entry"]["properties"]
    assert set(entry) == {f.encode_name for f in msgspec.structs.fields(EntryArguments)}
    assert set(LAUNCH_SCHEMA["properties"]["limits"]["properties"]) == set(LIMIT_KEYS)


def _validate(config: dict) -> None:
    schema = {
        **LAUNCH_SCHEMA,
        "properties": {
            **LAUNCH_SCHEMA["properties"],
            "type": {"const": "neural-python"},
            "request": {"const": "launch"},
            "name": {"type": "string"},
        },
        "additionalProperties": False,
    }
    jsonschema.validate(config, schema)


def test_snippets_and_initial_configurations_are_valid_launch_configurations():
    for config in DEBUGGER["initialConfigurations"]:
        _validate(config)
    for snippet in DEBUGGER["configurationSnippets"]:
        body = json.loads(json.dumps(snippet["body"]).replace('^\\"\\\\${file}\\"', "${file}"))
        _validate(body)
    with pytest.raises(jsonschema.ValidationError):
        _validate({"type": "neural-python", "request": "launch", "name": "x", "program": "a.py", "world": "dream"})


def test_the_readme_launch_json_examples_validate_against_the_schema():
    readme = (ROOT / "README.md").read_text()
    blocks = [json.loads(b) for b in re.findall(r"```json\n(.*?)\n```", readme, re.S)]
    ours = [b for b in blocks if isinstance(b, dict) and b.get("type") == "neural-python"]
    assert ours, "the README shows no neural-python launch configuration"
    for config in ours:
        _validate(config)


def test_the_language_server_settings_are_the_servers_and_all_are_passed_on():
    properties = PACKAGE["contributes"]["configuration"]["properties"]
    declared = {key.removeprefix("neuralDap.") for key in properties}
    server = {f.encode_name for f in msgspec.structs.fields(LspSettings)}
    # the extension's own: the switch, and the interpreter that runs the server (and so records)
    assert declared - {"languageServer.enabled", "python"} == server - {"python"}
    passed = re.search(r"SERVER_KEYS = \[([^\]]*)\]", (EXTENSION / "src" / "language.ts").read_text())
    assert passed and set(re.findall(r"'(\w+)'", passed.group(1))) == server - {"python"}
    assert "onLanguage:python" in PACKAGE["activationEvents"]
    assert "vscode-languageclient" in PACKAGE["dependencies"]


def test_the_toolbar_buttons_use_vscodes_menu_id_their_own_icons_and_sit_after_step_back():
    menus = PACKAGE["contributes"]["menus"]
    assert "debug/toolbar" not in menus  # VS Code's id is debug/toolBar: the wrong case is silently ignored
    buttons = {item["command"]: item for item in menus["debug/toolBar"]}
    assert set(buttons) == {"neuralDap.stepBackInto", "neuralDap.stepBackOut"}
    # VS Code's Step Back is navigation@50 and Reverse @55: ours come right after Step Back
    orders = [int(buttons[c]["group"].split("@")[1]) for c in ("neuralDap.stepBackInto", "neuralDap.stepBackOut")]
    assert 50 < orders[0] < orders[1] < 55
    for command in PACKAGE["contributes"]["commands"]:
        if command["command"] in buttons:
            icon = command["icon"]
            assert isinstance(icon, dict), "a codicon would look like VS Code's own Step Back / Step Out"
            for theme in ("light", "dark"):
                assert (EXTENSION / icon[theme]).is_file()


def test_the_marketplace_page_has_what_it_shows():
    assert (EXTENSION / PACKAGE["icon"]).read_bytes().startswith(b"\x89PNG")
    assert PACKAGE["repository"]["url"] and "Debuggers" in PACKAGE["categories"]
    assert (EXTENSION / "CHANGELOG.md").is_file() and (EXTENSION / "LICENSE").is_file()
    assert "--allow-missing-repository" not in PACKAGE["scripts"]["package"]
