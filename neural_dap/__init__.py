"""neural-dap: a Debug Adapter Protocol server for Python whose debuggee is a model of execution."""

__version__ = "0.1.0"
