"""pyflakes checking a source file, as an editor's linter does."""

import sys

from pyflakes.api import check
from pyflakes.reporter import Reporter

CODE = """
import os
import sys


def f(x):
    unused = 1
    return y + x


class C:
    def m(self):
        return undefined_name
"""


def lint(code, name):
    reporter = Reporter(sys.stdout, sys.stdout)
    warnings = check(code, name, reporter)  # breakpoint
    print(f"{warnings} warnings")
    return warnings


lint(CODE, "example.py")
