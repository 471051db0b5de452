"""`neural-dap adapter`: the DAP server, on stdio (default) or TCP (`--port N`, 127.0.0.1 unless `--host`)."""

from __future__ import annotations

import argparse
import logging
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, help="serve DAP over TCP on this port (0: pick one and print it)")
    parser.add_argument("--host", default="127.0.0.1", help="TCP address to bind (default 127.0.0.1, this machine only)")
    parser.add_argument("--log", help="write a debug log to this file (stdout is reserved for DAP in stdio mode)")


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    opts = parser.parse_args(argv)
    handlers = [logging.FileHandler(opts.log)] if opts.log else [logging.StreamHandler(sys.stderr)]
    logging.basicConfig(level=logging.DEBUG if opts.log else logging.WARNING, handlers=handlers, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    import anyio

    from neural_dap.dap.server import serve_stdio, serve_tcp
    from neural_dap.world.factory import create_world

    if opts.port is None:
        anyio.run(serve_stdio, create_world)
    else:

        def announce(text: str) -> None:
            print(text, flush=True)

        anyio.run(lambda: serve_tcp(create_world, opts.host, opts.port, announce))
    return 0
