"""The trace text format (CWM's dialect and the neural-debugger `nd` dialect): render and parse."""
