"""`python -m neural_dap`: the command line (the adapter, the language server, the MCP server).

`-m` puts the working directory first on sys.path: a project's own `json.py`, `types.py` or
`random.py` there would be imported by the adapter in place of the standard library's. It is taken
out before anything else is imported (the package itself is already found, and its modules are
found through it)."""

import os
import sys

if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from neural_dap.cli.main import main  # (after the path is set)

if __name__ == "__main__":
    raise SystemExit(main())
