// The plain Node.js server a user might write instead of macrod (make bench's second anchor):
// newline-delimited JSON-RPC on a Unix socket, JSON.parse each line, call a JS function, append
// the state to a journal with one fs.writeSync per call (before the reply, like macrod's
// journal), write the reply. No batching, no group commit.
//   node node-server.js SOCKET JOURNAL
"use strict";
const net = require("net");
const fs = require("fs");
const [socketPath, journalPath] = process.argv.slice(2);
const journal = fs.openSync(journalPath, "a");
const progress = { inner: 0, middle: 0, outer: 0 };
const macros = {
  add(amount) {
    let v = progress.inner + amount;
    if (v > 10) v -= 10;
    progress.inner = v;
    return v;
  },
};
function handle(line) {
  let request;
  try { request = JSON.parse(line); } catch (e) {
    return { jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } };
  }
  const macro = request.params && macros[request.params.name];
  if (request.method !== "macro.call" || !macro) {
    return { jsonrpc: "2.0", id: request.id, error: { code: -32601, message: "Method not found" } };
  }
  const result = macro(...(request.params.args || []));
  fs.writeSync(journal, JSON.stringify(progress) + "\n");
  return { jsonrpc: "2.0", id: request.id, result };
}
try { fs.unlinkSync(socketPath); } catch (e) { /* not there */ }
net.createServer((socket) => {
  let pending = "";
  socket.on("data", (chunk) => {
    pending += chunk;
    let end;
    while ((end = pending.indexOf("\n")) >= 0) {
      const line = pending.slice(0, end);
      pending = pending.slice(end + 1);
      socket.write(JSON.stringify(handle(line)) + "\n");
    }
  });
  socket.on("error", () => socket.destroy());
}).listen(socketPath);
process.on("SIGTERM", () => process.exit(0));
