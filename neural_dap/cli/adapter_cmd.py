"""`neural-dap adapter`: the DAP server, on stdio (default), TCP (`--port N`, 127.0.0.1 unless `--host`) or a
Unix socket only this user can open (`--socket PATH`)."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Awaitable, Callable
from functools import partial


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--port", type=int, help="serve DAP over TCP on this port (0: pick one and print it)")
    parser.add_argument(
        "--host", default="127.0.0.1", help="TCP address to bind (default 127.0.0.1, this machine only)"
    )
    parser.add_argument(
        "--socket", metavar="PATH", help="serve DAP on a Unix socket created 0600 (the safe choice on a shared machine)"
    )
    parser.add_argument("--log", help="write a debug log to this file (stdout is reserved for DAP in stdio mode)")


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    opts = parser.parse_args(argv)
    handlers = [logging.FileHandler(opts.log)] if opts.log else [logging.StreamHandler(sys.stderr)]
    logging.basicConfig(
        level=logging.DEBUG if opts.log else logging.WARNING,
        handlers=handlers,
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
    )
    import anyio

    from neural_dap.dap.server import serve_stdio, serve_tcp, serve_unix
    from neural_dap.world.factory import create_world

    def announce(text: str) -> None:
        print(text, flush=True)

    if opts.port is not None and opts.socket:
        parser.error("--port and --socket exclude each other")
    if opts.socket:
        serve = partial(serve_unix, create_world, opts.socket, announce)
    elif opts.port is not None:
        serve = partial(serve_tcp, create_world, opts.host, opts.port, announce)
    else:
        serve = partial(serve_stdio, create_world)
    try:
        anyio.run(until_signalled, serve)
    except OSError as exc:
        print(f"neural-dap adapter: {exc}", file=sys.stderr)
        return 1
    return 0


async def until_signalled(serve: Callable[[], Awaitable[None]]) -> None:
    """Serve until done, or until SIGTERM / SIGINT: then sessions close their worlds and the socket
    file goes, as on a normal end (a signal turned into KeyboardInterrupt would land anywhere)."""
    import anyio

    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(watch)
        await serve()
        tg.cancel_scope.cancel()
