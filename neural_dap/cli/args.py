"""Command lines of the form `neural-dap CMD [options] PROGRAM [options] [-- program args]`."""

from __future__ import annotations

import argparse


def parse_with_program(
    parser: argparse.ArgumentParser, argv: list[str], options_with_value: set[str]
) -> argparse.Namespace:
    """Our options may come before or after PROGRAM; other words after it, and everything after
    `--`, are the program's arguments (put in `argv` of the result)."""
    ours: list[str] = []
    program: list[str] = []
    theirs: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--":
            theirs.extend(argv[i + 1 :])
            break
        if arg in options_with_value and i + 1 < len(argv):
            ours += [arg, argv[i + 1]]
            i += 2
            continue
        if (
            arg in ("-h", "--help")
            or any(arg.startswith(o + "=") for o in options_with_value)
            or (arg.startswith("--") and not program)
        ) or (arg.startswith("--") and arg in {a for action in parser._actions for a in action.option_strings}):
            ours.append(arg)
        elif not program:
            program.append(arg)
        else:
            theirs.append(arg)
        i += 1
    opts = parser.parse_args(ours + program)
    opts.argv = theirs
    return opts
