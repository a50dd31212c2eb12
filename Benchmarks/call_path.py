#!/usr/bin/env python3
"""Counts the functions of ours one `macro.call` enters, from the decoded line to the bytes
handed to the kernel (docs/design.md, "How deep the path is").

How: a debug macrod (the default `io_thread: engine`) on a private socket runs `add`; gdb,
attached to it, stops where the path passes three points and prints the stack each time:
  1. the router admits the decoded line (`RequestRouter.admit`): the read side;
  2. JavaScript is entered (`JSObjectCallAsFunction`): the engine side;
  3. the reply's bytes go to the kernel (`writev`/`write`/`sendmsg` whose stack holds a
     frame of ours and no journal frame): the write side.
Counted: the distinct functions of our modules on those stacks (on the read side from the
handler the decoded line reaches, `ConnectionHandler.channelRead`, inward), compiler
thunks (reabstraction, protocol witness, partial application, outlined code) left out,
closures counted as the functions they are. Printed: each stack's frames of ours, and the
total. Run it with `make path-count` (it builds the debug macrod first).
"""
import argparse, os, re, shutil, signal, socket, subprocess, sys, tempfile, threading, time

OURS = ("MacroDaemon.", "MacroEngineCore.", "MacroRPC.", "MacroBase.", "MacroHTTP.")
THUNK = re.compile(r"^(reabstraction thunk|protocol witness|partial apply|outlined|merged|implicit closure #\d+ .* in static|@objc|thunk for)")

def demangle(names):
    out = subprocess.run(["swift", "demangle", "--compact"], input="\n".join(names), capture_output=True, text=True, check=True).stdout
    return out.splitlines()

def find_symbol(binary, wanted):
    names = [l.split()[-1] for l in subprocess.run(["nm", binary], capture_output=True, text=True, check=True).stdout.splitlines() if l.split()[-1].startswith("$s")]
    for name, pretty in zip(names, demangle(names)):
        if pretty.startswith(wanted):
            return name
    sys.exit(f"call_path.py: no function {wanted} in {binary} (renamed? update the script's points)")

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--macrod", default=".build/debug/macrod")
    args = parser.parse_args()
    if not shutil.which("gdb"):
        sys.exit("call_path.py: gdb is needed (apt-get install gdb)")
    work = tempfile.mkdtemp(prefix="call-path-")
    os.makedirs(f"{work}/macros"); os.makedirs(f"{work}/run", mode=0o700)
    open(f"{work}/macros/add.js", "w").write("function add(n) { progress.inner = (progress.inner + n) % 10; return progress.inner }\n")
    open(f"{work}/macroengine.yaml", "w").write(f"macros_dir: {work}/macros\nstate_file: {work}/state.json\nlog_level: warning\n")
    path = f"{work}/run/macrod.sock"
    daemon = subprocess.Popen([args.macrod, "--config", f"{work}/macroengine.yaml", "--socket", path], stderr=open(f"{work}/macrod.log", "w"))
    gdb = None
    try:
        deadline = time.time() + 20
        while not os.path.exists(path):
            if time.time() > deadline or daemon.poll() is not None: sys.exit(f"call_path.py: macrod did not start: {open(work + '/macrod.log').read()}")
            time.sleep(0.05)
        client = socket.socket(socket.AF_UNIX); client.connect(path); reader = client.makefile("rb")
        line = b'{"jsonrpc":"2.0","id":1,"method":"macro.call","params":{"name":"add","args":[1]}}\n'
        client.sendall(line); reader.readline()  # warm: the first call loads and compiles
        admit = find_symbol(args.macrod, "MacroDaemon.RequestRouter.admit(")
        submit = find_symbol(args.macrod, "MacroDaemon.EngineLane.submit(")
        receive = find_symbol(args.macrod, "MacroDaemon.ConnectionHandler.receive(")
        completed = find_symbol(args.macrod, "MacroDaemon.EngineLane.(completed in ")
        script = f"{work}/gdb.cmd"
        open(script, "w").write("\n".join([
            "set pagination off", "set confirm off", "set print frame-arguments none", "set breakpoint pending on",
            f"break '{admit}'", "commands\nsilent\necho @@STACK admit\\n\nbt\necho @@END\\n\ncontinue\nend",
            f"break '{submit}'", "commands\nsilent\necho @@STACK handover\\n\nbt\necho @@END\\n\ncontinue\nend",
            f"break '{completed}'", "commands\nsilent\necho @@STACK completed\\n\nbt\necho @@END\\n\ncontinue\nend",
            f"break '{receive}'", "commands\nsilent\necho @@STACK reply\\n\nbt\necho @@END\\n\ncontinue\nend",
            "break JSObjectCallAsFunction", "commands\nsilent\necho @@STACK javascript\\n\nbt\necho @@END\\n\ncontinue\nend",
            *[f"break {call}\ncommands\nsilent\necho @@STACK write\\n\nbt\necho @@END\\n\ncontinue\nend" for call in ("writev", "write", "sendmsg")],
            "echo @@READY\\n", "continue", ""]))
        gdb = subprocess.Popen(["gdb", "-q", "-nx", "-p", str(daemon.pid), "-x", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        # gdb's output is read all along: a full pipe would stop gdb, and with it macrod.
        output, ready = [], threading.Event()
        def drain():
            for text in gdb.stdout:
                output.append(text)
                if "@@READY" in text: ready.set()
        reading = threading.Thread(target=drain, daemon=True)
        reading.start()
        if not ready.wait(120): sys.exit("call_path.py: gdb did not attach:\n" + "".join(output)[-2000:])
        time.sleep(0.5)  # gdb resumes the process after printing READY
        client.sendall(line)
        reply = reader.readline()
        assert b'"result"' in reply, reply
        gdb.send_signal(signal.SIGINT)
        gdb.stdin.write("detach\nquit\n"); gdb.stdin.flush()
        gdb.wait(timeout=60)
        reading.join(timeout=10)
    finally:
        if gdb and gdb.poll() is None: gdb.kill()
        daemon.terminate(); daemon.wait()
        shutil.rmtree(work, ignore_errors=True)
    stacks = re.findall(r"@@STACK (\w+)\n(.*?)@@END", "".join(output), re.S)
    frames = lambda body: [m.group(1) for m in re.finditer(r"^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+)", body, re.M)]
    report, seen = [], []
    for kind, body in stacks:
        names = frames(body)
        pretty = demangle(names)
        ours = [p for p in pretty if p.startswith(OURS) or re.match(r"^closure #\d+ .* in (" + "|".join(re.escape(o) for o in OURS) + ")", p)]
        if not ours: continue
        # The reply's write: through the connection's handler (not the journal's, not a wake-up).
        if kind == "write" and not any(re.match(r"Macro\w+\.(ConnectionHandler|BusyGate)\.", p) for p in ours): continue
        ours = [p for p in ours if not THUNK.match(p)]
        # Outermost first; from the first pipeline callback of ours (what SwiftNIO calls) inward.
        ours.reverse()
        # The read side begins where the decoded line arrives: the handler after the line decoder.
        start = next((i for i, p in enumerate(ours) if re.search(r"ConnectionHandler\.channelRead", p)), 0)
        ours = ours[start:]
        short = []
        for p in ours:
            p = re.sub(r"\((\w+) in _[0-9A-F]+\)", r"\1", p)  # a private function's discriminator
            p = re.sub(r"^closure #(\d+) .*? in ", r"closure #\1 in ", p)
            short.append(re.sub(r"[(<].*", "", p))
        report.append((kind, short))
        for name in short:
            if name not in seen: seen.append(name)
    if not any(k == "write" for k, _ in report):
        sys.exit("call_path.py: gdb saw no write of the reply (the points moved?)\n" + "".join(output)[-3000:])
    for kind, short in report:
        print(f"{kind}: " + " -> ".join(short))
    print(f"functions of ours entered by one macro.call, from the decoded line to the write: {len(seen)}")

if __name__ == "__main__":
    main()
