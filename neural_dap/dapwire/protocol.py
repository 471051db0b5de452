"""Debug Adapter Protocol wire types (the subset neural-dap speaks), as msgspec Structs.

Field names are snake_case here and camelCase on the wire (`rename="camel"`), exactly as the
official `debugProtocol.json` spells them; `tests/test_dap_protocol.py` checks every type against
that schema. Argument types accept unknown fields (clients add their own keys), so decoding only
fails on wrong types of known fields, which becomes an error response.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec


class _Wire(msgspec.Struct, rename="camel", omit_defaults=True):
    pass


# -- messages -----------------------------------------------------------------------------------------


class Request(_Wire, tag="request", tag_field="type"):
    seq: int
    command: str
    arguments: Any = None


class Response(_Wire, tag="response", tag_field="type"):
    seq: int
    request_seq: int = msgspec.field(name="request_seq")  # the one snake_case name of the protocol
    success: bool
    command: str
    message: str | None = None
    body: Any = None


class Event(_Wire, tag="event", tag_field="type"):
    seq: int
    event: str
    body: Any = None


Message = Request | Response | Event


# -- shared types -------------------------------------------------------------------------------------


class Source(_Wire):
    name: str | None = None
    path: str | None = None
    source_reference: int | None = None
    presentation_hint: str | None = None


class ExceptionBreakpointsFilter(_Wire):
    filter: str
    label: str
    description: str | None = None
    default: bool | None = None
    supports_condition: bool | None = None


class Capabilities(msgspec.Struct, rename="camel"):
    """Sent whole: a capability left out reads as false to a client."""

    supports_configuration_done_request: bool = True
    supports_function_breakpoints: bool = True
    supports_conditional_breakpoints: bool = True
    supports_hit_conditional_breakpoints: bool = True
    supports_evaluate_for_hovers: bool = True
    exception_breakpoint_filters: list[ExceptionBreakpointsFilter] = []
    supports_step_back: bool = True
    supports_restart_frame: bool = True
    supports_goto_targets_request: bool = True
    supports_exception_info_request: bool = True
    supports_terminate_request: bool = True
    supports_cancel_request: bool = True
    # False: VS Code then asks for 20 frames at once, and a short stack shows no "Load More" row
    supports_delayed_stack_trace_loading: bool = False
    supports_log_points: bool = True
    supports_value_formatting_options: bool = False
    # what-if branches (dap/branch_requests.py): the program runs again with the value set
    supports_set_variable: bool = True
    supports_set_expression: bool = True
    supports_loaded_sources_request: bool = False
    supports_single_thread_execution_requests: bool = False
    # value changes in the recorded run (debugger/history.py); other worlds answer with no dataId
    supports_data_breakpoints: bool = True


class Breakpoint(_Wire):
    verified: bool
    id: int | None = None
    message: str | None = None
    source: Source | None = None
    line: int | None = None
    reason: str | None = None


class Thread(_Wire):
    id: int
    name: str


class StackFrame(_Wire):
    id: int
    name: str
    line: int
    column: int
    source: Source | None = None
    presentation_hint: str | None = None


class Scope(_Wire):
    name: str
    variables_reference: int
    expensive: bool
    presentation_hint: str | None = None
    named_variables: int | None = None
    indexed_variables: int | None = None


class VariablePresentationHint(_Wire):
    kind: str | None = None
    attributes: list[str] | None = None
    visibility: str | None = None


class Variable(_Wire):
    name: str
    value: str
    variables_reference: int
    type: str | None = None
    evaluate_name: str | None = None
    named_variables: int | None = None
    indexed_variables: int | None = None
    presentation_hint: VariablePresentationHint | None = None


class GotoTarget(_Wire):
    id: int
    label: str
    line: int


class ExceptionDetails(_Wire):
    message: str | None = None
    type_name: str | None = None
    full_type_name: str | None = None
    stack_trace: str | None = None


# -- request arguments ------------------------------------------------------------------------------------


class InitializeArguments(_Wire):
    adapter_id: str = msgspec.field(default="", name="adapterID")
    client_id: str | None = msgspec.field(default=None, name="clientID")
    client_name: str | None = None
    lines_start_at1: bool = True
    columns_start_at1: bool = True
    path_format: str | None = None
    supports_progress_reporting: bool = False
    supports_invalidated_event: bool = False
    supports_variable_type: bool = False
    supports_run_in_terminal_request: bool = False  # the client answers `runInTerminal` (a terminal console)
    supports_start_debugging_request: bool = False  # the client opens child sessions (subProcess)


class RunInTerminalRequestArguments(_Wire):
    """A reverse request: the adapter asks the client to run a command in its terminal."""

    args: list[str]
    cwd: str
    kind: Literal["integrated", "external"]  # sent always (the schema's default is integrated)
    title: str | None = None


class EntryArguments(_Wire):
    function: str
    args: str | None = None
    returns: str | None = None


class LaunchArguments(_Wire):
    """The launch keys every world shares. The others (model, reconcile, trust, limits, recording)
    belong to the world asked for, which declares and checks them; the DAP layer passes them on.
    The VS Code extension's schema lists both (a test compares them)."""

    program: str | None = None
    module: str | None = None  # `python -m MODULE` (e.g. "pytest"), instead of a program
    args: list[str] = []
    cwd: str | None = None
    env: dict[str, str] = {}
    env_file: str | None = None  # a dotenv file; `env` overrides it
    python_args: list[str] = []  # interpreter options, e.g. ["-X", "dev"]
    stdin: str | None = None  # a file the program reads as its standard input (as `< input.txt`)
    # debugpy's keys for where the program's input and output go (dap/terminal.py)
    console: Literal["internalConsole", "integratedTerminal", "externalTerminal"] | None = None
    redirect_output: bool | None = None  # with a terminal console: its output in the debug console too
    stop_on_entry: bool = False
    stop_at_end: bool = True
    entry: EntryArguments | None = None
    world: str = "recorded"
    python: str | None = None  # interpreter that runs the program (recording, debugpy, noDebug)
    no_debug: bool = False
    port: int | None = None  # an editor connects to `neural-dap adapter --port N` with it; the server ignores it


LAUNCH_KEYS: frozenset[str] = frozenset(f.encode_name for f in msgspec.structs.fields(LaunchArguments))


class SourceBreakpoint(_Wire):
    line: int
    column: int | None = None
    condition: str | None = None
    hit_condition: str | None = None
    log_message: str | None = None


class SetBreakpointsArguments(_Wire):
    source: Source
    breakpoints: list[SourceBreakpoint] | None = None
    lines: list[int] | None = None
    source_modified: bool = False


class FunctionBreakpoint(_Wire):
    name: str
    condition: str | None = None
    hit_condition: str | None = None


class SetFunctionBreakpointsArguments(_Wire):
    breakpoints: list[FunctionBreakpoint]


class SetExceptionBreakpointsArguments(_Wire):
    filters: list[str]


class ThreadArguments(_Wire):
    thread_id: int = 1
    single_thread: bool | None = None
    granularity: str | None = None


class StackTraceArguments(_Wire):
    thread_id: int = 1
    start_frame: int = 0
    levels: int = 0


class ScopesArguments(_Wire):
    frame_id: int


class VariablesArguments(_Wire):
    variables_reference: int
    filter: Literal["indexed", "named"] | None = None
    start: int = 0
    count: int = 0


class EvaluateArguments(_Wire):
    expression: str
    frame_id: int | None = None
    context: str | None = None


class RestartFrameArguments(_Wire):
    frame_id: int


class GotoTargetsArguments(_Wire):
    source: Source
    line: int
    column: int | None = None


class GotoArguments(_Wire):
    thread_id: int
    target_id: int


class DataBreakpointInfoArguments(_Wire):
    name: str
    variables_reference: int | None = None
    frame_id: int | None = None
    mode: str | None = None


class DataBreakpoint(_Wire):
    data_id: str
    access_type: str | None = None
    condition: str | None = None
    hit_condition: str | None = None


class SetDataBreakpointsArguments(_Wire):
    breakpoints: list[DataBreakpoint]


# custom requests: questions asked of the whole recorded run (debugger/history.py)
class ValueHistoryArguments(_Wire):
    expression: str
    frame_id: int | None = None
    start: int = 0
    count: int = 100


class LastChangeArguments(_Wire):
    expression: str
    frame_id: int | None = None
    before: int | None = None


class ValueOriginArguments(_Wire):
    expression: str
    frame_id: int | None = None


class CallsArguments(_Wire):
    function: str
    start: int = 0
    count: int = 100


class TravelArguments(_Wire):
    index: int


class LogpointHistoryArguments(_Wire):
    source: Source
    line: int
    log_message: str
    start: int = 0
    count: int = 100


class CancelArguments(_Wire):
    request_id: int | None = None
    progress_id: str | None = None


class DisconnectArguments(_Wire):
    restart: bool = False
    terminate_debuggee: bool | None = None


class SourceArguments(_Wire):
    source_reference: int
    source: Source | None = None


# -- event bodies -------------------------------------------------------------------------------------------


class StoppedEventBody(_Wire):
    # omit_defaults drops a field equal to its default: what must be sent has no default here
    reason: str
    thread_id: int
    all_threads_stopped: bool
    description: str | None = None
    text: str | None = None
    preserve_focus_hint: bool | None = None
    hit_breakpoint_ids: list[int] | None = None


class ContinuedEventBody(_Wire):
    thread_id: int
    all_threads_continued: bool


class OutputEventBody(_Wire):
    output: str
    category: str
    source: Source | None = None
    line: int | None = None


class ExitedEventBody(_Wire):
    exit_code: int


class ThreadEventBody(_Wire):
    reason: str
    thread_id: int


class InvalidatedEventBody(_Wire):
    areas: list[str] | None = None
    thread_id: int | None = None
    stack_frame_id: int | None = None


class ProgressStartEventBody(_Wire):
    progress_id: str
    title: str
    cancellable: bool
    message: str | None = None


class ProgressEndEventBody(_Wire):
    progress_id: str
    message: str | None = None


class ProcessEventBody(_Wire):
    name: str
    start_method: str
    is_local_process: bool


# Which schema definition each type corresponds to (checked by the tests against debugProtocol.json).
SCHEMA_NAMES: dict[type, str] = {
    Request: "Request",
    Response: "Response",
    Event: "Event",
    Source: "Source",
    ExceptionBreakpointsFilter: "ExceptionBreakpointsFilter",
    Capabilities: "Capabilities",
    Breakpoint: "Breakpoint",
    Thread: "Thread",
    StackFrame: "StackFrame",
    Scope: "Scope",
    VariablePresentationHint: "VariablePresentationHint",
    Variable: "Variable",
    GotoTarget: "GotoTarget",
    ExceptionDetails: "ExceptionDetails",
    InitializeArguments: "InitializeRequestArguments",
    RunInTerminalRequestArguments: "RunInTerminalRequestArguments",
    SourceBreakpoint: "SourceBreakpoint",
    SetBreakpointsArguments: "SetBreakpointsArguments",
    FunctionBreakpoint: "FunctionBreakpoint",
    SetFunctionBreakpointsArguments: "SetFunctionBreakpointsArguments",
    SetExceptionBreakpointsArguments: "SetExceptionBreakpointsArguments",
    StackTraceArguments: "StackTraceArguments",
    ScopesArguments: "ScopesArguments",
    VariablesArguments: "VariablesArguments",
    EvaluateArguments: "EvaluateArguments",
    RestartFrameArguments: "RestartFrameArguments",
    GotoTargetsArguments: "GotoTargetsArguments",
    GotoArguments: "GotoArguments",
    CancelArguments: "CancelArguments",
    DataBreakpointInfoArguments: "DataBreakpointInfoArguments",
    DataBreakpoint: "DataBreakpoint",
    SetDataBreakpointsArguments: "SetDataBreakpointsArguments",
    DisconnectArguments: "DisconnectArguments",
    SourceArguments: "SourceArguments",
    StoppedEventBody: "StoppedEvent",
    ContinuedEventBody: "ContinuedEvent",
    OutputEventBody: "OutputEvent",
    ExitedEventBody: "ExitedEvent",
    ThreadEventBody: "ThreadEvent",
    InvalidatedEventBody: "InvalidatedEvent",
    ProgressStartEventBody: "ProgressStartEvent",
    ProgressEndEventBody: "ProgressEndEvent",
    ProcessEventBody: "ProcessEvent",
}
