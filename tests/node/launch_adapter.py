"""DebugClient passes a single argument to its runtime; this file is that argument."""

from neural_dap.cli.main import main

raise SystemExit(main(["adapter"]))
