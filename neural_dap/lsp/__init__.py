"""`neural-dap lsp`: recorded and predicted values in the editor, without a debug session.

`server` speaks the Language Server Protocol (pygls) and turns facts into inlay hints, hovers and
code lenses (`views`); `analyzer` decides what runs when (entries a file declares: `entries`; the
folder's trust: `trust`; the settings: `settings`) and keeps the latest run of each; `runs` drives
the debugger core through a whole run and gathers what each line did; `check` is the same analysis
for a terminal (`neural-dap check`).
"""
