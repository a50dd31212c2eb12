"""Drives macrod with tinyrpc, a third-party JSON-RPC 2.0 client library.

Usage: tinyrpc_client.py SOCKET

tinyrpc matches every reply to a request it sent by id and raises
"Reply id does not correspond to any sent requests" otherwise, so ids that do not come back
exactly (integers above 2**53, time_ns() ids) fail here. Prints one line per reply; exit 1 on
any protocol error.
"""
import json
import socket
import sys
import time

from tinyrpc.protocols.jsonrpc import JSONRPCErrorResponse, JSONRPCProtocol


def main(path):
    now = time.time_ns()
    ids = [2**60 + 1, 2**60, now, 2**53 + 1, "s-1"]
    labels = {now: "time_ns"}
    protocol = JSONRPCProtocol(id_generator=iter(ids))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    stream = sock.makefile("rwb")
    # Pipelined: every request is sent before any reply is read.
    for _ in ids:
        request = protocol.create_request("macro.call", kwargs={"name": "bump", "args": ["inner", 1]})
        stream.write(request.serialize() + b"\n")
    other = JSONRPCProtocol(id_generator=iter([7, 8]))
    for request in [other.create_request("no.such", args=[1]), other.create_request("macro.call", kwargs={"name": "bump", "argz": [1]})]:
        stream.write(request.serialize() + b"\n")
    stream.flush()
    pending = len(ids) + 2
    while pending:
        line = stream.readline()
        if not line:
            print("the connection closed early")
            return 1
        if "method" in json.loads(line):
            continue  # a notification, not a reply
        parser = other if json.loads(line).get("id") in (7, 8) else protocol
        reply = parser.parse_reply(line.rstrip(b"\n"))  # raises when the id was not sent
        label = labels.get(reply.unique_id, repr(reply.unique_id))
        if isinstance(reply, JSONRPCErrorResponse):
            print(label, "error", reply._jsonrpc_error_code, reply.error)
        else:
            print(label, "result", json.dumps(reply.result))
        pending -= 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
