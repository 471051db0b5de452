"""Only the optional C tracer lives here; everything else is in pyproject.toml.

`optional=True`: where the extension cannot be built, neural-dap records with its pure-Python
tracer (same events, slower).
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("neural_dap.trace._ctracer", ["neural_dap/trace/_ctracer.c"], optional=True)])
