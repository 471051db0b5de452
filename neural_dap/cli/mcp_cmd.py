"""`neural-dap mcp`: recorded and predicted execution as tools for coding agents (Model Context
Protocol), on stdio (what an agent starts), or streamable HTTP on 127.0.0.1 behind a bearer token."""

from __future__ import annotations

import argparse
import logging
import os
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--root",
        default=".",
        help="the workspace: programs, folders and files outside it are refused (default: the current folder)",
    )
    parser.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help="serve streamable HTTP on 127.0.0.1:PORT (the path /mcp) instead of stdio; a bearer token is printed",
    )
    parser.add_argument(
        "--token",
        help="with --http: the bearer token to require (default: a new random one, or $NEURAL_DAP_MCP_TOKEN)",
    )
    parser.add_argument(
        "--live-evaluate",
        action="store_true",
        help="let the agent's expressions run in a live copy of the recorded program (calls, methods); "
        "by default they are only interpreted over the recorded values, never executed",
    )
    parser.add_argument(
        "--model",
        action="append",
        default=[],
        metavar="URL_OR_FOLDER",
        help="a model `predict` may use besides the embedded one and model folders inside the root "
        "(an OpenAI-compatible URL or a folder; repeat for more). Agents cannot name others",
    )
    parser.add_argument("--log", help="write a debug log to this file")


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    opts = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if opts.log else logging.WARNING,
        handlers=[logging.FileHandler(opts.log)] if opts.log else [logging.StreamHandler(sys.stderr)],
    )
    root = os.path.abspath(os.path.expanduser(opts.root))
    if not os.path.isdir(root):
        parser.error(f"--root {root} is not a folder")
    import anyio

    try:
        from neural_dap.mcp import server
    except ImportError as exc:
        print(f"neural-dap mcp needs the MCP SDK: pip install 'neural-dap[mcp]' ({exc})", file=sys.stderr)
        return 2

    if opts.http is None:
        if opts.token:
            parser.error("--token goes with --http")
        anyio.run(server.serve_stdio, root, opts.live_evaluate, tuple(opts.model))
        return 0
    if not 0 < opts.http < 65536:
        parser.error("--http takes a port number from 1 to 65535")
    token = opts.token or os.environ.get("NEURAL_DAP_MCP_TOKEN") or server.new_token()
    print(
        f"neural-dap mcp: http://127.0.0.1:{opts.http}/mcp (workspace {root})\n"
        f"neural-dap mcp: token {token}  (send it as: Authorization: Bearer {token})",
        file=sys.stderr,
        flush=True,
    )
    anyio.run(
        lambda: server.serve_http(root, opts.http, token, live_evaluate=opts.live_evaluate, models=tuple(opts.model))
    )
    return 0
