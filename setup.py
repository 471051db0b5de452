"""Only the optional C tracer lives here; everything else is in pyproject.toml.

`optional=True`: where the extension cannot be built, neural-dap records with its pure-Python
engines (same events, slower). The tracer is built against the limited API of 3.11 (`abi3`): the
recording child may run under another interpreter (the `python` launch key), and a 3.12 or 3.13
child loads the same build (its sys.monitoring front end).
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "neural_dap.trace._ctracer",
            ["neural_dap/trace/_ctracer.c"],
            py_limited_api=True,
            define_macros=[("Py_LIMITED_API", "0x030B0000")],
            optional=True,
        )
    ],
    options={"bdist_wheel": {"py_limited_api": "cp311"}},
)
