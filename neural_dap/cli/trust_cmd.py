"""`neural-dap trust [FOLDER]`, `--revoke FOLDER`, `--list`: the folders whose code the language server
may run on its own (it records the entries a file declares when the file is opened)."""

from __future__ import annotations

import argparse
import os
import sys


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", nargs="?", help="the folder to trust, with its subfolders (default: this one)")
    parser.add_argument("--revoke", metavar="FOLDER", help="forget what was decided for FOLDER (trusted or Never)")
    parser.add_argument("--list", action="store_true", help="list the folders trusted or refused, and the store")


def run(parser: argparse.ArgumentParser, argv: list[str]) -> int:
    opts = parser.parse_args(argv)
    if sum(bool(x) for x in (opts.folder, opts.revoke, opts.list)) > 1:
        parser.error("give one of FOLDER, --revoke FOLDER, --list")
    from neural_dap.core import trust

    try:
        if opts.list:
            return _list(trust.store_path())
        if opts.revoke:
            return _revoke(opts.revoke)
        folder = trust.canonical(opts.folder or os.getcwd())
        if not os.path.isdir(folder):
            print(f"neural-dap trust: {folder} is not a folder", file=sys.stderr)
            return 1
        trust.decide(folder, "trusted")
    except trust.TrustStoreError as exc:
        print(f"neural-dap trust: {exc}", file=sys.stderr)
        return 1
    print(f"trusted {folder} and its subfolders: the language server runs the entries declared there")
    return 0


def _list(store: os.PathLike[str]) -> int:
    from neural_dap.core import trust

    folders = trust.load().folders
    print(f"# {os.fspath(store)}")
    for folder in sorted(folders, key=lambda f: f.path):
        print(f"{folder.decision:<8} {folder.path}  (since {folder.since})")
    if not folders:
        print("no folder is trusted or refused")
    return 0


def _revoke(path: str) -> int:
    from neural_dap.core import trust

    forgotten = trust.revoke(path)
    if forgotten is not None:
        print(f"forgot {forgotten.path} ({forgotten.decision})")
        return 0
    covering = trust.decision_for(trust.load(), path)
    where = f": it is covered by {covering.path} ({covering.decision}); revoke that" if covering else ""
    print(f"neural-dap trust: {trust.canonical(path)} has no decision of its own{where}", file=sys.stderr)
    return 1
