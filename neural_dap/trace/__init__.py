"""Real execution: the recorder (a child process under a tracer) and the state tree with the actions.

Kept import-light: the recording child imports `neural_dap.trace.child` under any interpreter.
"""
