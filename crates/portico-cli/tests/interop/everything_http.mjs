// Runs @modelcontextprotocol/server-everything's Streamable HTTP transport, unchanged, on
// 127.0.0.1 only and on a port the kernel picks. Used by crates/portico-cli/tests/interop.rs.
//
//     PORT=0 node everything_http.mjs NPM_PREFIX
//
// The server calls `app.listen(process.env.PORT)`, which binds every interface; this wrapper
// adds the host 127.0.0.1 to that one listen call and prints `LISTENING 127.0.0.1:PORT` on
// stderr once bound, so the test learns the port without a race.
import net from "node:net";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const prefix = resolve(process.argv[2] ?? ".ci-cache/npm");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || typeof args[0] === "string") {
    const rest = typeof args[1] === "string" ? args.slice(2) : args.slice(1);
    args = [args[0], "127.0.0.1", ...rest];
  }
  this.once("listening", () => {
    const a = this.address();
    console.error(`LISTENING ${a.address}:${a.port}`);
  });
  return listen.apply(this, args);
};

await import(
  pathToFileURL(join(prefix, "node_modules/@modelcontextprotocol/server-everything/dist/transports/streamableHttp.js")).href
);
