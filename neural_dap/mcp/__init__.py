"""`neural-dap mcp`: recorded and predicted execution as tools for coding agents (Model Context Protocol).

`server` registers the tools and runs a transport (stdio, or streamable HTTP behind a bearer token);
`tools` carries them out over the same debugger core as the DAP server, one `Debugger` per session;
`sessions` keeps those sessions and confines every path to the workspace root; `views` turns a stop
into a bounded, source-annotated result a model reads well.
"""
