"""The Debug Adapter Protocol on the wire: its messages as typed Structs (`protocol`), their
framing with limits checked before anything is allocated (`framing`), and a client (`client`).
Used by the DAP server (`neural_dap.dap`), the terminal front end, the debugpy peer that
reconciles predictions with reality, and the tests; it knows nothing of debugging."""
