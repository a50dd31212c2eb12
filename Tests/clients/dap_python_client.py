"""A real third-party DAP client against `macro dap`: dap-python (PyPI), a sans-IO Debug Adapter
Protocol client whose pydantic models validate every response and event it reads.

    python3 dap_python_client.py MACRO_BINARY SOCKET MACROS_DIR

Launches `main` with [3], sets a breakpoint in lib/helpers.js, runs to it, steps once, reads the
variables, continues to the end, and prints one line per step (the test compares them exactly).
"""
import subprocess
import sys
from typing import Optional

from dap import Client
from dap import handler as dap_handler
from dap.base import ErrorResponse
from dap.events import ExitedEvent, InitializedEvent, OutputEvent, StoppedEvent, TerminatedEvent
from dap.responses import Initialized, ScopesResponse, StackTraceResponse, VariablesResponse

# dap-python 0.5.0 validates the answer to a request whose response has no body of its own
# (launch, configurationDone, next, disconnect, ...) as a whole Response made of the body alone,
# which no adapter's answer passes; such an answer is taken as the Response it is. Every other
# response and every event still goes through the library's models.
_handle_response = dap_handler.Handler.handle_response


def handle_response(self, response):
    try:
        return _handle_response(self, response)
    except ValueError:
        return response


dap_handler.Handler.handle_response = handle_response
# It also declares the stopped event's hitBreakpointIds as strings; the protocol's are numbers.
StoppedEvent.model_fields["hitBreakpointIds"].annotation = Optional[list[int]]
StoppedEvent.model_rebuild(force=True)

binary, socket, macros = sys.argv[1:4]
adapter = subprocess.Popen([binary, "dap", "--socket", socket], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
client = Client(adapter_id="macro", client_name="dap-python", lines_start_at1=True, columns_start_at1=True)
pending = []


def flush():
    data = client.send()
    if data:
        adapter.stdin.write(data)
        adapter.stdin.flush()


def wait(kind):
    """Reads until a message of `kind` (a dap-python model) arrives; returns it."""
    while True:
        while pending:
            message = pending.pop(0)
            if isinstance(message, ErrorResponse):
                raise SystemExit(f"request failed: {message}")
            if isinstance(message, kind):
                return message
        flush()
        chunk = adapter.stdout.read1(65536)
        if not chunk:
            raise SystemExit(f"macro dap ended before {kind.__name__}")
        pending.extend(client.receive(chunk))


def position(frame):
    return f"{frame.source.path.replace(macros + '/', '')}:{frame.line}:{frame.column} {frame.name}"


caps = wait(Initialized)
print("initialize", caps.supportsConfigurationDoneRequest, caps.supportsConditionalBreakpoints)
client.send_request("launch", {"macro": "main", "args": [3]})
wait(InitializedEvent)
client.set_breakpoints({"path": macros + "/lib/helpers.js"}, [{"line": 3}])
client.configuration_done()
stop = wait(StoppedEvent)
print("stopped", stop.reason)
client.stack_trace(stop.threadId)
frames = wait(StackTraceResponse).stackFrames
print("stack", " < ".join(position(f) for f in frames))
client.next(stop.threadId)
stop = wait(StoppedEvent)
client.stack_trace(stop.threadId)
top = wait(StackTraceResponse).stackFrames[0]
print("stepped", stop.reason, position(top))
client.scopes(top.id)
scope = wait(ScopesResponse).scopes[0]
client.variables(scope.variablesReference)
variables = wait(VariablesResponse).variables
print("variables", scope.name, ", ".join(f"{v.name}={v.value}" for v in variables))
client.set_breakpoints({"path": macros + "/lib/helpers.js"}, [])
client.continue_(stop.threadId)
output = wait(OutputEvent)
print("output", output.output.splitlines()[0])
print("exited", wait(ExitedEvent).exitCode)
wait(TerminatedEvent)
client.disconnect()
flush()
adapter.stdin.close()
print("adapter exit", adapter.wait(10))
