#!/usr/bin/env python3
"""make otel-test: macro-otel end to end, against a real macrod and an OTLP/HTTP receiver.

A private macrod (temporary directory, 0700, its own socket and state) runs small macros; a
receiver in this script takes OTLP/HTTP on 127.0.0.1 (http/json decoded as JSON, http/protobuf
with opentelemetry-proto from PyPI); macro-otel runs between them. Every span is compared with
the record `run.get` gives for its run: name, start and end, attributes, status, events. Then the
hostile cases: macrod not there, macrod stopped and restarted, macrod killed (-9) and restarted
(its run ids go back), the collector down, malformed replies, bad settings, huge records, a burst.

    python3 Integrations/otel/test.py --macrod PATH --macro-otel PATH

Ends with `otel-test: N passed, N failed` (exit 1 when any failed).
"""

import argparse
import base64
import datetime
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

PASSED = 0
FAILED = 0


def check(name, ok, detail=""):
    global PASSED, FAILED
    if ok:
        PASSED += 1
        print(f"  ok    {name}")
    else:
        FAILED += 1
        print(f"  FAIL  {name}{': ' + str(detail) if detail else ''}")
    return ok


def wait_for(predicate, timeout, step=0.05):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(step)
    return predicate()


def iso_ns(text):
    """macrod's `started` (2026-11-22T08:50:39.526Z) in nanoseconds since 1970, exactly."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    moment = datetime.datetime.strptime(whole, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    return int(moment.timestamp()) * 10**9 + int((fraction or "0").ljust(9, "0")[:9])


def compact(value):
    """JSON as MacroValue.jsonText writes it (compact, UTF-8 kept)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# The OTLP/HTTP receiver


def attribute_value(value):
    if "stringValue" in value:
        return value["stringValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return float(value["doubleValue"])
    if "boolValue" in value:
        return value["boolValue"]
    return value


def attributes(items):
    return {item["key"]: attribute_value(item.get("value", {})) for item in items or []}


class Receiver:
    """OTLP/HTTP on 127.0.0.1: POST /v1/traces, JSON or protobuf; keeps the spans, normalized."""

    def __init__(self, port=0):
        self.spans = []
        self.requests = []
        self.connections = set()
        self.lock = threading.Lock()
        self.port = port
        self.server = None
        self.start()

    def start(self):
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def setup(self):
                super().setup()
                with receiver.lock:
                    receiver.connections.add(self.connection)

            def finish(self):
                super().finish()
                with receiver.lock:
                    receiver.connections.discard(self.connection)

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                kind = self.headers.get("Content-Type", "")
                if kind.startswith("application/json"):
                    payload = json.loads(body)
                    answer, answer_type = b"{}", "application/json"
                else:
                    from google.protobuf import json_format
                    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

                    request = trace_service_pb2.ExportTraceServiceRequest()
                    request.ParseFromString(body)
                    payload = json_format.MessageToDict(request, use_integers_for_enums=True)
                    answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                    answer_type = "application/x-protobuf"
                receiver.take(self.path, kind, payload)
                self.send_response(200)
                self.send_header("Content-Type", answer_type)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        """Down: no listener, and the kept-alive connections closed."""
        self.server.shutdown()
        self.server.server_close()
        with self.lock:
            for connection in self.connections:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def take(self, path, kind, payload):
        spans = []
        for resource_spans in payload.get("resourceSpans", []):
            resource = attributes(resource_spans.get("resource", {}).get("attributes"))
            for scope in resource_spans.get("scopeSpans", []):
                for span in scope.get("spans", []):
                    spans.append(
                        {
                            "name": span["name"],
                            "kind": span.get("kind"),
                            "start": int(span["startTimeUnixNano"]),
                            "end": int(span["endTimeUnixNano"]),
                            "attributes": attributes(span.get("attributes")),
                            "events": [
                                {"name": e["name"], "time": int(e["timeUnixNano"]), "attributes": attributes(e.get("attributes"))}
                                for e in span.get("events", [])
                            ],
                            "status": span.get("status", {}),
                            "resource": resource,
                            "path": path,
                            "content_type": kind,
                        }
                    )
        with self.lock:
            self.requests.append((path, kind))
            self.spans.extend(spans)

    def snapshot(self):
        with self.lock:
            return list(self.spans)

    def by_run(self):
        runs = {}
        for span in self.snapshot():
            runs.setdefault((span["attributes"].get("macro.run.id"), span["start"]), []).append(span)
        return runs


# ---------------------------------------------------------------------------------------------
# macrod, its socket, macro-otel


class RPC:
    """A JSON-RPC client on macrod's socket (one JSON text per line)."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(30)
        self.sock.connect(path)
        self.buffer = b""
        self.next_id = 0

    def close(self):
        self.sock.close()

    def line(self):
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("macrod closed the connection")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return json.loads(line)

    def send(self, method, params=None):
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.sock.sendall((json.dumps(message) + "\n").encode())
        return self.next_id

    def reply(self, request_id):
        while True:
            message = self.line()
            if message.get("id") == request_id:
                return message

    def call(self, method, params=None):
        return self.reply(self.send(method, params))


MACROS = {
    "add.js": "function add(a, b) {\n    console.log('adding', a, b);\n    progress.inner += 1;\n    return { sum: a + b, text: 'é' };\n}\n",
    "boom.js": "function boom(what) {\n    console.log('about to fail on', what);\n    console.warn('second line');\n    throw new TypeError('bad input: ' + what);\n}\n",
    "tick.js": "async function tick(ms) {\n    await sleep(ms);\n    progress.middle += 0.5;\n    await sleep(ms);\n    return 'ticked';\n}\n",
    "chatty.js": "function chatty() {\n    for (let i = 0; i < 300; i++) console.log('line ' + i);\n    return 300;\n}\n",
    "big.js": "function big() {\n    console.log('x'.repeat(10000));\n    return 'y'.repeat(30000);\n}\n",
    # Keeps the engine busy in promise jobs past its budget: macrod restarts its engine and keeps a
    # record of the run it stopped, which no run.recorded announces.
    "wedge.js": "async function wedge() {\n    for (;;) await null;\n}\n",
}

CONFIG = """\
runs_kept: 5000
failed_runs_kept: 2000
log_level: info
time_limit_ms: 1000
stall_grace_ms: 500
"""


class Macrod:
    def __init__(self, binary, directory):
        self.binary = binary
        self.directory = directory
        self.socket = os.path.join(directory, "macrod.sock")
        self.process = None
        os.makedirs(os.path.join(directory, "macros"), exist_ok=True)
        for name, source in MACROS.items():
            with open(os.path.join(directory, "macros", name), "w") as f:
                f.write(source)
        with open(os.path.join(directory, "config.yaml"), "w") as f:
            f.write(CONFIG)

    def start(self):
        env = dict(os.environ)
        env.pop("MACROENGINE_CONFIG", None)
        env.pop("MACROENGINE_SOCKET", None)
        env["XDG_CONFIG_HOME"] = os.path.join(self.directory, "xdg-config")
        log = open(os.path.join(self.directory, "macrod.log"), "a")
        self.process = subprocess.Popen(
            [self.binary, "--config", os.path.join(self.directory, "config.yaml"), "--socket", self.socket,
             "--macros", os.path.join(self.directory, "macros"), "--state", os.path.join(self.directory, "state.json")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, env=env)

        def answers():
            if self.process.poll() is not None:
                raise RuntimeError("macrod exited: " + open(os.path.join(self.directory, "macrod.log")).read()[-2000:])
            try:
                RPC(self.socket).close()
                return True
            except OSError:
                return False

        if not wait_for(answers, 20):
            raise RuntimeError("macrod did not answer on " + self.socket)

    def stop(self, sig=signal.SIGTERM):
        self.process.send_signal(sig)
        return self.process.wait(timeout=30)

    def run(self, name, *args):
        """Calls macro `name`; returns its run's whole record (run.get)."""
        rpc = RPC(self.socket)
        try:
            rpc.call("macro.call", {"name": name, "args": list(args)})
            newest = rpc.call("run.list", {"name": name, "limit": 1})["result"][-1]
            return rpc.call("run.get", {"id": newest["id"]})["result"]
        finally:
            rpc.close()


class Sidecar:
    def __init__(self, binary, directory, name):
        self.binary = binary
        self.log_path = os.path.join(directory, name + ".log")
        self.process = None

    def start(self, args, env_extra):
        env = dict(os.environ)
        for key in list(env):
            if key.startswith("OTEL_"):
                del env[key]
        env.update(env_extra)
        self.process = subprocess.Popen([self.binary] + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=open(self.log_path, "w"), env=env)
        return self

    def log(self):
        with open(self.log_path) as f:
            return f.read()

    def alive(self):
        return self.process.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        started = time.monotonic()
        self.process.send_signal(sig)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = "killed after %ss" % timeout
        return code, time.monotonic() - started


# ---------------------------------------------------------------------------------------------
# The checks of one span against its record


def check_span(span, record, label, max_events=100, max_bytes=4096):
    a = span["attributes"]
    problems = []

    def expect(what, got, want):
        if got != want:
            problems.append(f"{what}: {got!r} != {want!r}")

    start = iso_ns(record["started"])
    expect("name", span["name"], "macro " + record["macro"])
    expect("start", span["start"], start)
    expect("end", span["end"], start + round(record["timings"]["totalMs"] * 1e6))
    expect("macro.name", a.get("macro.name"), record["macro"])
    expect("macro.version", a.get("macro.version"), record["version"])
    expect("macro.origin", a.get("macro.origin"), record["origin"])
    expect("macro.run.id", a.get("macro.run.id"), record["id"])
    expect("macro.call.id", a.get("macro.call.id"), record["call"])
    expect("macro.arguments", a.get("macro.arguments"), compact(record["arguments"]))
    expect("macro.javascript_ms", a.get("macro.javascript_ms"), record["timings"]["javascriptMs"])
    expect("macro.total_ms", a.get("macro.total_ms"), record["timings"]["totalMs"])
    expect("macro.changes", a.get("macro.changes"), len(record["changes"]))
    expect("macro.store_changes", a.get("macro.store_changes"), len(record["storeChanges"]))
    console = record["console"]
    turns = record["timings"]["turns"]
    expect("macro.console.lines", a.get("macro.console.lines"), len(console) + record.get("consoleDropped", 0))
    expect("macro.turns", a.get("macro.turns"), len(turns) + record["timings"].get("turnsDropped", 0))
    console_events = [e for e in span["events"] if e["name"] == "console"]
    turn_events = [e for e in span["events"] if e["name"] == "turn"]
    expect("console events", len(console_events), min(max_events, len(console)))
    expect("turn events", len(turn_events), min(max_events, len(turns)))
    for event, line in zip(console_events, console):
        expect("console event", (event["attributes"].get("console.level"), event["attributes"].get("console.message")),
               (line["level"], cut(line["message"], max_bytes)))
        expect("console event time", event["time"], start)
    for event, turn in zip(turn_events, turns):
        expect("turn event", (event["attributes"].get("turn.at_ms"), event["attributes"].get("turn.ms")), (turn["atMs"], turn["ms"]))
        expect("turn event time", event["time"], start + round(turn["atMs"] * 1e6))
    error = record.get("error")
    exceptions = [e for e in span["events"] if e["name"] == "exception"]
    if error:
        headline = f"{error.get('name', error['code'])}: {error['message']}"
        if error.get("file"):
            headline += f" at {error['file']}" + "".join(f":{error[k]}" for k in ("line", "column") if error.get(k) is not None)
        expect("status", (span["status"].get("code"), span["status"].get("message")), (2, cut(headline, max_bytes)))
        expect("macro.error.code", a.get("macro.error.code"), error["code"])
        expect("macro.error.name", a.get("macro.error.name"), error.get("name"))
        expect("macro.error.message", a.get("macro.error.message"), cut(error["message"], max_bytes))
        expect("macro.error.file", a.get("macro.error.file"), error.get("file"))
        expect("macro.error.line", a.get("macro.error.line"), error.get("line"))
        expect("macro.error.column", a.get("macro.error.column"), error.get("column"))
        expect("macro.result", a.get("macro.result"), None)
        expect("exception events", len(exceptions), 1)
        if exceptions:
            expect("exception.type", exceptions[0]["attributes"].get("exception.type"), error.get("name", error["code"]))
            expect("exception.message", exceptions[0]["attributes"].get("exception.message"), cut(error["message"], max_bytes))
            expect("exception time", exceptions[0]["time"], span["end"])
    else:
        expect("status", span["status"].get("code", 0), 0)
        expect("macro.result", a.get("macro.result"), cut(compact(record["result"]), max_bytes))
        expect("macro.error.code", a.get("macro.error.code"), None)
        expect("exception events", len(exceptions), 0)
    return check(f"{label}: span of run {record['id']} ({record['macro']}) matches its record", not problems, "; ".join(problems[:6]))


def cut(text, limit):
    data = text.encode()
    if len(data) <= limit:
        return text
    kept = data[:limit].decode("utf-8", errors="ignore")
    return kept + f"…[cut: {len(data) - len(kept.encode())} bytes]"


def spans_of(receiver, record):
    return [s for s in receiver.snapshot() if s["attributes"].get("macro.run.id") == record["id"] and s["start"] == iso_ns(record["started"])]


def wait_spans(receiver, records, timeout=15):
    return wait_for(lambda: all(spans_of(receiver, r) for r in records), timeout)


def no_duplicates(receiver, label):
    dups = {k: len(v) for k, v in receiver.by_run().items() if len(v) > 1}
    return check(f"{label}: no run exported twice ({len(receiver.snapshot())} spans)", not dups, dups)


# ---------------------------------------------------------------------------------------------
# Fake daemons for malformed replies


def fake_daemon(path, answer):
    """A Unix socket server answering each request line with `answer(request)` (bytes)."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(8)

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return

            def talk(conn=conn):
                buffer = b""
                with conn:
                    while True:
                        try:
                            chunk = conn.recv(65536)
                        except OSError:
                            return
                        if not chunk:
                            return
                        buffer += chunk
                        while b"\n" in buffer:
                            line, _, buffer = buffer.partition(b"\n")
                            try:
                                conn.sendall(answer(json.loads(line)))
                            except OSError:
                                return

            threading.Thread(target=talk, daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return server


# ---------------------------------------------------------------------------------------------


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--macrod", required=True)
    parser.add_argument("--macro-otel", required=True)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    options = parser.parse_args()

    directory = tempfile.mkdtemp(prefix="macro-otel-test-")  # 0700: macrod refuses a world-writable socket directory
    print(f"==> macro-otel end to end in {directory}")
    receiver = Receiver()
    endpoint = f"http://127.0.0.1:{receiver.port}"
    fast = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_EXPORTER_OTLP_TIMEOUT": "3000"}
    macrod = Macrod(options.macrod, directory)
    state = os.path.join(directory, "otel-state.json")
    sidecars = []

    def sidecar(name, args=(), env=None, socket_path=None):
        s = Sidecar(options.macro_otel, directory, name).start(["--socket", socket_path or macrod.socket] + list(args), env if env is not None else fast)
        sidecars.append(s)
        return s

    try:
        # -- Bad settings: refused at once, with the setting named.
        print("-- bad settings")
        bad = sidecar("bad-protocol", env=dict(fast, OTEL_EXPORTER_OTLP_PROTOCOL="grpc"))
        code = bad.process.wait(timeout=10)
        check("OTEL_EXPORTER_OTLP_PROTOCOL=grpc: exit 1 naming it", code == 1 and "OTEL_EXPORTER_OTLP_PROTOCOL=grpc" in bad.log(), (code, bad.log()[-300:]))
        bad = sidecar("bad-endpoint", env=dict(fast, OTEL_EXPORTER_OTLP_ENDPOINT="localhost:4318"))
        code = bad.process.wait(timeout=10)
        check("an endpoint without http://: exit 1 naming it", code == 1 and "OTEL_EXPORTER_OTLP_ENDPOINT=localhost:4318" in bad.log(), (code, bad.log()[-300:]))
        bad = sidecar("bad-option", args=["--poll-seconds", "0"])
        code = bad.process.wait(timeout=10)
        check("--poll-seconds 0: usage error (64)", code == 64 and "--poll-seconds" in bad.log(), (code, bad.log()[-300:]))

        # -- No macrod yet: a clear error, retries, a clean stop.
        print("-- macrod not running")
        early = sidecar("early")
        time.sleep(1.5)
        check("no macrod: still running, retrying", early.alive())
        check("no macrod: the error names the socket", f"no daemon answers at {macrod.socket}" in early.log() and "unreachable" in early.log(), early.log()[-400:])
        code, took = early.stop()
        check(f"no macrod: SIGTERM stops it at once (exit {code}, {took:.2f} s)", code == 0 and took < 5)

        # -- Malformed replies from something that is not macrod.
        print("-- malformed replies")
        for label, answer in [
            ("not JSON", lambda request: b"hello there\n"),
            ("subscribe without runs", lambda request: (compact({"jsonrpc": "2.0", "id": request.get("id"), "result": {"events": []}}) + "\n").encode()),
            ("run.list not an array", lambda request: (compact({"jsonrpc": "2.0", "id": request.get("id"), "result": {"events": ["runs"]} if request["method"] == "subscribe" else 42}) + "\n").encode()),
        ]:
            path = os.path.join(directory, "fake.sock")
            server = fake_daemon(path, answer)
            fake = sidecar("fake", socket_path=path)
            seen = wait_for(lambda: "malformedReply" in fake.log(), 5)
            check(f"{label}: malformedReply logged, still running", seen and fake.alive(), fake.log()[-400:])
            code, _ = fake.stop()
            check(f"{label}: clean stop (exit {code})", code == 0)
            server.close()
            os.unlink(path)

        # -- Runs recorded before macro-otel starts are caught up; then live ones.
        print("-- catch-up at start, then live runs")
        macrod.start()
        before = [macrod.run("add", 1, 2), macrod.run("boom", "x")]
        live = sidecar("main", args=["--state", state])
        check("runs kept before the start are exported", wait_spans(receiver, before))
        for record in before:
            check_span(spans_of(receiver, record)[0], record, "catch-up")
        check("OTEL_SERVICE_NAME defaults to macrod", all(s["resource"].get("service.name") == "macrod" for s in receiver.snapshot()))
        check("http/json goes to /v1/traces as application/json", all(s["path"] == "/v1/traces" and s["content_type"].startswith("application/json") for s in receiver.snapshot()))
        records = [macrod.run("add", 3, 4.5), macrod.run("boom", {"deep": [1, 2]}), macrod.run("tick", 30)]
        check("live runs are exported", wait_spans(receiver, records))
        for record in records:
            check_span(spans_of(receiver, record)[0], record, "live")
        check("an async run has its turns (>= 3)", len(records[2]["timings"]["turns"]) >= 3, records[2]["timings"])

        # -- Huge records: bounded attributes and events.
        print("-- huge records")
        chatty, big = macrod.run("chatty"), macrod.run("big")
        check("huge records are exported", wait_spans(receiver, [chatty, big]))
        check_span(spans_of(receiver, chatty)[0], chatty, "300 console lines")
        check_span(spans_of(receiver, big)[0], big, "10 KB line, 30 KB result")
        span = spans_of(receiver, chatty)[0]
        check("300 console lines: 100 events, the other 200 counted",
              len([e for e in span["events"] if e["name"] == "console"]) == 100 and span["attributes"].get("macro.console.dropped") == 200,
              span["attributes"].get("macro.console.dropped"))
        span = spans_of(receiver, big)[0]
        result = span["attributes"].get("macro.result", "")
        check("30 KB result: cut to 4096 bytes with a note", len(result.encode()) < 4200 and result.endswith("…[cut: 25906 bytes]"), result[-40:])
        line = [e for e in span["events"] if e["name"] == "console"][0]["attributes"]["console.message"]
        check("10 KB console line: cut to 4096 bytes with a note", line.endswith("…[cut: 5904 bytes]"), line[-40:])
        no_duplicates(receiver, "so far")

        # -- SIGTERM flushes; the state file makes the next start export only the newer runs.
        print("-- stop, runs while stopped, restart from the state file, flush at SIGTERM")
        code, took = live.stop()
        check(f"SIGTERM: exit {code} in {took:.2f} s", code == 0 and took < 10)
        saved = json.load(open(state))
        check("the state file holds the last run exported", saved["lastRunId"] == big["id"], saved)
        count = len(receiver.snapshot())
        while_down = [macrod.run("add", 10, i) for i in range(3)]
        slow = dict(fast, OTEL_BSP_SCHEDULE_DELAY="60000")  # no export before the stop's flush
        flusher = sidecar("flush", args=["--state", state], env=slow)
        time.sleep(2)
        check("with a 60 s schedule delay nothing is sent before the stop", len(receiver.snapshot()) == count, len(receiver.snapshot()) - count)
        code, took = flusher.stop()
        check(f"SIGTERM flushes the spans it holds (exit {code}, {took:.2f} s)", code == 0 and wait_spans(receiver, while_down, 5))
        check("only the runs after the state file's are exported", len(receiver.snapshot()) == count + 3, len(receiver.snapshot()) - count)
        for record in while_down:
            check_span(spans_of(receiver, record)[0], record, "from the state file")

        # -- macrod stops and starts again: reconnect, catch up, no duplicates.
        print("-- macrod restarted (SIGTERM)")
        live = sidecar("main2", args=["--state", state])
        wait_for(lambda: "connected to macrod" in live.log(), 10)
        check("macrod stopped cleanly", macrod.stop() == 0)
        time.sleep(1.5)
        check("macrod gone: macro-otel still running and says so", live.alive() and "lost macrod" in live.log(), live.log()[-400:])
        macrod.start()
        after_restart = [macrod.run("add", 20, 1), macrod.run("boom", "after restart")]
        check("after macrod's restart the new runs are exported", wait_spans(receiver, after_restart))
        for record in after_restart:
            check_span(spans_of(receiver, record)[0], record, "after restart")
        no_duplicates(receiver, "after restart")

        # -- macrod killed (-9): its records since its last stop are lost and ids start again.
        print("-- macrod killed (-9) and restarted")
        lost = [macrod.run("add", 30, i) for i in range(2)]
        check("runs before the kill are exported", wait_spans(receiver, lost))
        macrod.stop(signal.SIGKILL)
        macrod.start()
        reused = [macrod.run("add", 40, i) for i in range(3)]
        check("run ids went back after kill -9 (the test's premise)", reused[0]["id"] <= lost[-1]["id"], (reused[0]["id"], lost[-1]["id"]))
        check("runs with reused ids are exported", wait_spans(receiver, reused), live.log()[-600:])
        for record in reused:
            if spans_of(receiver, record):
                check_span(spans_of(receiver, record)[0], record, "reused ids")
        no_duplicates(receiver, "after kill -9")
        check("the ids going back is logged", "records since its last stop were lost" in live.log(), live.log()[-400:])

        # -- The collector down: a short outage is ridden out (the HTTP client keeps trying to
        # connect until OTEL_EXPORTER_OTLP_TIMEOUT, 3 s here); past it the batch is dropped and
        # logged. macro-otel stays up either way.
        print("-- collector down")
        receiver.stop()
        short = [macrod.run("add", 50, i) for i in range(2)]
        time.sleep(0.5)
        receiver.start()
        check("collector down 0.5 s: the spans arrive when it is back", wait_spans(receiver, short, 10))
        receiver.stop()
        long = [macrod.run("add", 51, i) for i in range(2)]
        dropped = wait_for(lambda: "Failed to export batch" in live.log(), 10)
        check("collector down past the export timeout: the dropped batch is logged", dropped, live.log()[-400:])
        check("collector down: macro-otel still running", live.alive())
        receiver.start()
        after = [macrod.run("add", 60, 1)]
        check("collector back: new spans arrive", wait_spans(receiver, after, 10))
        arrived = sum(1 for r in long if spans_of(receiver, r))
        print(f"  info  {arrived} of the {len(long)} spans sent during the long outage arrived (swift-otel drops a batch it cannot send)")
        no_duplicates(receiver, "after the collector's return")

        # -- A burst: every run exported once; how long it takes.
        print("-- burst of 500 runs")
        rpc = RPC(macrod.socket)
        first = rpc.call("run.list", {"limit": 1})["result"][-1]["id"]
        start = time.monotonic()
        for batch in range(10):
            ids = [rpc.send("macro.call", {"name": "add", "args": [batch, i]}) for i in range(50)]
            for request_id in ids:
                rpc.reply(request_id)
        ran = time.monotonic() - start
        burst = [r for r in rpc.call("run.list", {"limit": 1000})["result"] if r["id"] > first]
        rpc.close()
        ids = {r["id"] for r in burst}
        done = wait_for(lambda: ids <= {s["attributes"].get("macro.run.id") for s in receiver.snapshot()}, 60)
        took = time.monotonic() - start
        check(f"burst: all {len(burst)} runs exported ({ran:.2f} s of calls, all spans in {took:.2f} s)", done and len(burst) == 500)
        no_duplicates(receiver, "after the burst")
        code, took = live.stop()
        check(f"SIGTERM after the burst: exit {code} in {took:.2f} s", code == 0)

        # -- A catch-up of thousands: paced to the batch processor (a batch a tick), none dropped.
        print("-- catch-up of 3000 runs kept while macro-otel was stopped")
        rpc = RPC(macrod.socket)
        first = rpc.call("run.list", {"limit": 1})["result"][-1]["id"]
        for batch in range(60):
            ids = [rpc.send("macro.call", {"name": "add", "args": [batch, i]}) for i in range(50)]
            for request_id in ids:
                rpc.reply(request_id)
        kept = [r["id"] for r in rpc.call("run.list", {"limit": 5000})["result"] if r["id"] > first]
        rpc.close()
        start = time.monotonic()
        default_delay = {k: v for k, v in fast.items() if k != "OTEL_BSP_SCHEDULE_DELAY"}  # macro-otel's 1 s
        catchup = sidecar("catchup", args=["--state", state], env=default_delay)
        wanted = set(kept)
        done = wait_for(lambda: wanted <= {s["attributes"].get("macro.run.id") for s in receiver.snapshot()}, 90)
        took = time.monotonic() - start
        check(f"catch-up: all {len(kept)} runs exported in {took:.1f} s", done and len(kept) == 3000)
        check("catch-up: nothing dropped by the batch processor", "dropped" not in catchup.log(), catchup.log()[-300:])
        no_duplicates(receiver, "after the catch-up")
        catchup.stop()

        # -- macrod stopped and started again in the middle of a catch-up.
        print("-- macrod restarted in the middle of a catch-up")
        rpc = RPC(macrod.socket)
        first = rpc.call("run.list", {"limit": 1})["result"][-1]["id"]
        for batch in range(30):
            ids = [rpc.send("macro.call", {"name": "add", "args": [batch, i, "again"]}) for i in range(50)]
            for request_id in ids:
                rpc.reply(request_id)
        wanted = {r["id"] for r in rpc.call("run.list", {"limit": 5000})["result"] if r["id"] > first}
        rpc.close()
        catchup = sidecar("catchup2", args=["--state", state, "--poll-seconds", "2"], env=default_delay)
        exported = lambda: wanted & {s["attributes"].get("macro.run.id") for s in receiver.snapshot()}
        partly = wait_for(lambda: len(exported()) >= 300, 30)
        check(f"{len(exported())} of {len(wanted)} exported when macrod stops", partly and len(exported()) < len(wanted))
        check("macrod stopped in the middle of the catch-up", macrod.stop() == 0)
        macrod.start()
        done = wait_for(lambda: exported() == wanted, 90)
        check(f"after macrod's restart the catch-up goes on: all {len(wanted)} exported", done, len(wanted) - len(exported()))
        no_duplicates(receiver, "after the interrupted catch-up")

        # -- The engine restart's record of the run it stopped gets no notification: the poll finds it.
        print("-- a run stopped by the engine restart (stall)")
        rpc = RPC(macrod.socket)
        reply = rpc.call("macro.call", {"name": "wedge"})
        check("wedge: stopped by the engine restart", reply.get("error", {}).get("code") == -32001, reply)
        failed = rpc.call("run.list", {"name": "wedge", "failed": True, "limit": 1})["result"]
        record = rpc.call("run.get", {"id": failed[-1]["id"]})["result"] if failed else None
        rpc.close()
        check("the stopped run is recorded", record is not None and "engine restart" in record["error"]["message"], record)
        if record:
            check("its span arrives within the poll (--poll-seconds 2)", wait_spans(receiver, [record], 10), catchup.log()[-300:])
            if spans_of(receiver, record):
                check_span(spans_of(receiver, record)[0], record, "engine restart")
        no_duplicates(receiver, "after the engine restart")
        catchup.stop()

        # -- The default protocol, http/protobuf, decoded with opentelemetry-proto.
        print("-- http/protobuf")
        try:
            import google.protobuf  # noqa: F401
            from opentelemetry.proto.collector.trace.v1 import trace_service_pb2  # noqa: F401
        except ImportError:
            check("opentelemetry-proto importable (PYTHONPATH)", False, "pip install opentelemetry-proto")
        else:
            proto = sidecar("proto", args=["--skip-existing"], env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "200", "OTEL_SERVICE_NAME": "macrod-test"})
            wait_for(lambda: "--skip-existing" in proto.log(), 10)
            count = len(receiver.snapshot())
            records = [macrod.run("boom", "protobuf"), macrod.run("add", 1, 1)]
            check("http/protobuf: the spans arrive", wait_spans(receiver, records))
            for record in records:
                span = [s for s in spans_of(receiver, record) if s["content_type"] == "application/x-protobuf"]
                check("http/protobuf: sent as application/x-protobuf", bool(span))
                if span:
                    check_span(span[0], record, "http/protobuf")
                    check("OTEL_SERVICE_NAME is honoured", span[0]["resource"].get("service.name") == "macrod-test", span[0]["resource"])
            check("--skip-existing: only the new runs", len(receiver.snapshot()) == count + 2, len(receiver.snapshot()) - count)
            proto.stop()
        macrod.stop()
    except Exception as error:  # a step that could not run is a failure, with the logs' tails
        check("the test ran to its end", False, repr(error))
        for s in sidecars:
            print(f"--- {s.log_path}\n{s.log()[-1500:]}")
    finally:
        for s in sidecars:
            if s.alive():
                s.process.kill()
        if macrod.process and macrod.process.poll() is None:
            macrod.process.kill()
        if options.keep or FAILED:
            print(f"(kept {directory})")
        else:
            shutil.rmtree(directory, ignore_errors=True)
    print(f"otel-test: {PASSED} passed, {FAILED} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
