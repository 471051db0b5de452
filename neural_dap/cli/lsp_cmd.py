"""`neural-dap lsp`: the language server on stdio (or TCP on 127.0.0.1 with `--tcp`), or `--check FILE`
to print what an editor would show."""

from __future__ import annotations

import argparse
import json
import logging
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--stdio", action="store_true", help="serve on stdin/stdout (the default; clients pass it)")
    parser.add_argument("--tcp", action="store_true", help="serve on TCP instead of stdio")
    parser.add_argument("--host", default="127.0.0.1", help="TCP address (default 127.0.0.1, this machine only)")
    parser.add_argument("--port", type=int, default=2087, help="TCP port (default 2087)")
    parser.add_argument("--check", metavar="FILE", help="print the hints, lenses and diagnostics of FILE, then exit")
    parser.add_argument(
        "--entry", action="append", default=[], metavar="CALL", help="with --check: run this call, e.g. 'f([3, 1])'"
    )
    parser.add_argument("--world", choices=["recorded", "neural", "both"], help="what runs (default recorded)")
    parser.add_argument("--model", help='"embedded" (default), an OpenAI-compatible URL or a model folder')
    parser.add_argument("--find-input", action="store_true", help="with --check: find inputs for `-> VALUE` entries")
    parser.add_argument(
        "--trust",
        action="store_true",
        help="with --check: run FILE's code even if its folder is not trusted (see `neural-dap trust`)",
    )
    parser.add_argument("--settings", help="settings as JSON, as a client's initializationOptions")
    parser.add_argument("--log", help="write a debug log to this file")


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    opts = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if opts.log else logging.WARNING,
        handlers=[logging.FileHandler(opts.log)] if opts.log else [logging.StreamHandler(sys.stderr)],
    )
    from neural_dap.lsp.settings import SettingsError, settings_from

    raw = json.loads(opts.settings) if opts.settings else {}
    if opts.world:
        raw["world"] = opts.world
    if opts.model:
        raw["model"] = opts.model
    if opts.check:
        raw.setdefault("autoRun", "all")
    try:
        settings = settings_from(raw)
    except SettingsError as exc:
        parser.error(str(exc))
    if opts.check:
        import anyio

        from neural_dap.lsp.check import check
        from neural_dap.lsp.entries import EntryError

        try:
            trusted = opts.trust or raw.get("trustedWorkspace") is True
            print(anyio.run(lambda: check(opts.check, opts.entry, settings, opts.find_input, trusted)))
        except (OSError, EntryError) as exc:
            print(f"neural-dap lsp: {exc}", file=sys.stderr)
            return 1
        return 0
    from neural_dap.lsp.server import create_server

    trusted = raw.get("trustedWorkspace")
    server = create_server(settings, trusted if isinstance(trusted, bool) else None)
    if opts.tcp:
        server.start_tcp(opts.host, opts.port)
    else:
        server.start_io()
    return 0
