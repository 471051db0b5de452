"""The recorder's wrappers of the interpreter's functions, dressed as the functions they wrap.

The recording process wraps a few C functions of `os`, `threading` and `subprocess` (`os._exit`
flushes the recording first, `os.fork` counts the processes the program starts, `os.execv` ends the
recording, ...). A module's variables are shown as debugpy shows them, so a user who opens `os` would
otherwise see `<function _limit_processes.<locals>.counted.<locals>.start>` where debugpy shows
`<built-in function fork>`. `like(original, wrapper)` gives a C function object (the C tracer's
`dressed_as`) with the original's name, module, signature and docstring that calls the wrapper;
where the C tracer is not built, the wrapper itself. Standard library only.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any


def like(original: Any, wrapper: Callable) -> Callable:
    """`wrapper`, shown as the C function `original` is (a Python function is left as it is)."""
    if type(original) is not types.BuiltinFunctionType:
        return wrapper
    try:
        from neural_dap.trace._ctracer import dressed_as
    except ImportError:
        return wrapper
    name = original.__name__
    module = getattr(original, "__module__", None) or "builtins"
    signature = getattr(original, "__text_signature__", None)
    doc = original.__doc__
    if signature:  # (CPython reads the signature off the docstring's first line: `name(sig)\n--\n\n`)
        doc = f"{name}{signature}\n--\n\n{doc or ''}"
    try:
        return dressed_as(wrapper, name, str(module), doc)
    except (TypeError, ValueError, MemoryError):
        return wrapper
