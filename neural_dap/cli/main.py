"""The `neural-dap` command. Each subcommand lives in its own module, imported only when used,
so `neural-dap adapter` starts without loading torch or the recorder."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMANDS = {
    "trace": ("neural_dap.cli.trace_cmd", "record a program and print its states"),
    "adapter": ("neural_dap.cli.adapter_cmd", "run the DAP server (stdio, or TCP with --port)"),
    "debug": ("neural_dap.cli.debug_cmd", "debug a program in the terminal (a DAP client of the server)"),
    "dataset": ("neural_dap.cli.dataset_cmd", "generate programs and debugger trajectories for training"),
    "train": ("neural_dap.cli.train_cmd", "train the embedded neural debugger"),
    "lsp": ("neural_dap.cli.lsp_cmd", "the language server: recorded and predicted values in the editor"),
    "mcp": ("neural_dap.cli.mcp_cmd", "recorded and predicted execution as tools for coding agents (MCP)"),
    "trust": ("neural_dap.cli.trust_cmd", "the folders whose code the language server may run on its own"),
    "export": ("neural_dap.cli.export_cmd", "record a program and write its calls as a Perfetto (Chrome) trace"),
    "eval": ("neural_dap.cli.eval_cmd", "measure a world model: next-state accuracy, CRUXEval-O/-I"),
}


# numpy's OpenBLAS starts a thread per core when it loads, and each spins for about 0.1 s of a core
# waiting for work that never comes (neural-dap does no linear algebra with numpy); on a two-core
# machine that is the core a recording child needs at launch (a whole `debug` took ~40 ms longer)
_BLAS_THREADS = "OPENBLAS_NUM_THREADS"


def load_numpy_with_one_blas_thread() -> None:
    """numpy, loaded with OpenBLAS's pool at one thread. The setting lives only while numpy loads
    (OpenBLAS reads it then): the programs debugged inherit the environment as the user set it."""
    if "numpy" in sys.modules:
        return
    saved = os.environ.get(_BLAS_THREADS)
    os.environ[_BLAS_THREADS] = "1"
    try:
        import numpy  # noqa: F401
    except ImportError:
        pass
    finally:
        if saved is None:
            del os.environ[_BLAS_THREADS]
        else:
            os.environ[_BLAS_THREADS] = saved


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: neural-dap COMMAND [options]\n\ncommands:")
        for name, (_, text) in COMMANDS.items():
            print(f"  {name:<9} {text}")
        print("\n`neural-dap COMMAND --help` describes each.")
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        from neural_dap import __version__

        print(f"neural-dap {__version__}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"neural-dap: unknown command {name!r}; one of: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    load_numpy_with_one_blas_thread()
    module = importlib.import_module(COMMANDS[name][0])
    parser = argparse.ArgumentParser(prog=f"neural-dap {name}", description=COMMANDS[name][1])
    module.add_arguments(parser)
    try:
        return int(module.run(parser, rest) or 0)
    except BrokenPipeError:  # `neural-dap trace ... | head`
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
