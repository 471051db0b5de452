"""What runs in the editor's terminal for a launch with `"console": "integratedTerminal"`: it joins
the terminal to the program being recorded, so that `input()` reads what the user types here and
the program's output shows here.

    python -I .../neural_dap/terminal_relay.py SOCKET TOKEN [--wait]

The debug adapter asks the editor to run this (DAP `runInTerminal`). It connects to the adapter's
Unix socket (in a folder only this user can open), says the token it was given, then forwards its
stdin to the adapter and what the adapter sends to its stdout, until the adapter closes the
connection: the program has ended, and the recording is there to debug. With --wait (an external
terminal, a window of its own that closes when this ends) it then waits for Enter, so the program's
last words can be read. ctrl-C ends the relay; the program then reads end-of-file (`pause` in the
editor ends the recording where the program is).

Standard library only, and no imports from neural_dap: it runs as a plain file (`-I`), under
whatever interpreter and environment the terminal has.
"""

from __future__ import annotations

import os
import socket
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    wait = args[2:] == ["--wait"]
    if len(args) != 2 and not wait:
        print("usage: terminal_relay.py SOCKET TOKEN [--wait] (started by neural-dap's debug adapter)", file=sys.stderr)
        return 2
    path, token = args[:2]
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(path)
        connection.sendall(token.encode() + b"\n")
    except OSError as exc:
        print(f"neural-dap: cannot reach the debugger at {path}: {exc}", file=sys.stderr)
        return 1
    # a daemon thread: it may sit in a read of the terminal when the program ends, and must not keep
    # this process (and the terminal) waiting for a key
    input_ended = threading.Event()
    typing = threading.Thread(target=_forward_typing, args=(connection, input_ended), daemon=True)
    typing.start()
    try:
        _show_output(connection)
        if wait:
            # what is typed from now on ends the typing thread (its send fails) instead of reaching
            # the program. Whether the input had already ended is read before, not after: the key
            # the user presses may end the thread before this thread looks at it again
            ended_before = input_ended.is_set()
            connection.close()
            print("\n[neural-dap: the program has ended; press Enter to close this window]", flush=True)
            if ended_before:  # ctrl-D: a terminal still reads a line after it
                os.read(0, 1 << 16)
            else:
                typing.join()
    except KeyboardInterrupt:
        pass
    return 0


def _forward_typing(connection: socket.socket, input_ended: threading.Event) -> None:
    try:
        while data := os.read(0, 1 << 16):
            connection.sendall(data)
        input_ended.set()
        connection.shutdown(socket.SHUT_WR)  # end-of-file (ctrl-D): the program's input ends too
    except OSError:
        pass


def _show_output(connection: socket.socket) -> None:
    while data := connection.recv(1 << 16):
        view = memoryview(data)
        while view:
            view = view[os.write(1, view) :]


if __name__ == "__main__":
    sys.exit(main())
