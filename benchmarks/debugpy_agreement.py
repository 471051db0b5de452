"""The whole debugpy agreement sweep: every example program, every stepping plan, on 3.11 and 3.12,
stop for stop and value for value against a real debugpy (tests/test_debugpy_agreement.py; the test
suite runs a sample of it). Prints pytest's summary: how many combinations agree.

Run: python benchmarks/debugpy_agreement.py [pytest options, e.g. -n 2]
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

if __name__ == "__main__":
    env = {**os.environ, "NEURAL_DAP_SWEEP": "full"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_debugpy_agreement.py"]
    sys.exit(subprocess.run([*command, *sys.argv[1:]], cwd=ROOT, env=env).returncode)
