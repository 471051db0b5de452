"""The C parts live here; everything else is in pyproject.toml.

- The tracer (`_ctracer`), built against the limited API of 3.11 (`abi3`): the recording child may
  run under another interpreter (the `python` launch key), and a 3.12 or 3.13 child loads the same
  build (its sys.monitoring front end).
- The structure of values (`_values`), same API: the walk over an object's attributes that a full
  capture makes at every line (child/values.py's Reprs.structure defines it).
- The records' index (`_records`), same API: the adapter's one pass over a recording's skeleton
  records as they arrive (trace/skeleton.py keeps numpy passes that do the same where it is not built).
- The journal (`_journal`): a plain C library, no Python in it, which the adapter preloads into the
  recording child (LD_PRELOAD) so that the program's contact with the world is recorded once and
  replays touch nothing (see its header). Named like an extension so that the same build step makes
  it; it is never imported.

`optional=True`: where one cannot be built, neural-dap still records, with its pure-Python engines
(same events, slower) and, without the journal, in full (every state kept, no replays).
"""

import sys

from setuptools import Extension, setup


def _of_the_limited_api(name: str) -> Extension:
    """A module of neural_dap.trace built against the limited API of 3.11 (one build for 3.11+)."""
    return Extension(
        f"neural_dap.trace.{name}",
        [f"neural_dap/trace/{name}.c"],
        py_limited_api=True,
        define_macros=[("Py_LIMITED_API", "0x030B0000")],
        optional=True,
    )


extensions = [_of_the_limited_api(name) for name in ("_ctracer", "_values", "_records")]
if sys.platform.startswith("linux"):
    extensions.append(
        Extension(
            "neural_dap.trace._journal",
            ["neural_dap/trace/_journal.c"],
            py_limited_api=True,
            libraries=["dl", "pthread"],
            extra_compile_args=["-fvisibility=hidden"],
            optional=True,
        )
    )

setup(ext_modules=extensions, options={"bdist_wheel": {"py_limited_api": "cp311"}})
