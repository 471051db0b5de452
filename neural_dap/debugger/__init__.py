"""The debugger core: what an execution request does and why it stops, for every front end."""
