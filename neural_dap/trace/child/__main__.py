"""`python -m neural_dap.trace.child`: the recording child process."""

from neural_dap.trace.child.runner import main

main()
