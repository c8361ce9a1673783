// A long-lived TCP connection for real-kernel tests (graceful termination, restarts): one
// script, two roles, each run inside a namespace.
//
//   bun test/support/e2e-hold.ts server --name pod1 --port 8090 [--max-seconds 600]
//       Keeps every connection open and answers each line it receives with one JSON line
//       naming this pod and the peer it sees ({"pod","peer","seq"}). Prints "READY" once bound.
//   bun test/support/e2e-hold.ts client --target IP:PORT [--interval-ms 200] [--timeout-ms 5000]
//       [--max-seconds 600] [--reset]
//       Opens one connection and sends a line every --interval-ms on it, printing "OPEN <local>"
//       once connected, then "REPLY <json>" per answer, or "FAIL <reason>" (and exits 1) when a
//       reply is late by --timeout-ms or the connection breaks. SIGTERM closes the connection
//       (with --reset: an RST, so IPVS moves it to CLOSE and not into the fixed 2 min TIME_WAIT)
//       and exits 0 after printing "CLOSED".

import { connect, createServer, type Socket } from "node:net";

interface Args {
  role: "server" | "client";
  name: string;
  port: number;
  host: string;
  intervalMs: number;
  timeoutMs: number;
  maxSeconds: number;
  reset: boolean;
}

function parseArgs(argv: readonly string[]): Args {
  const role = argv[0];
  if (role !== "server" && role !== "client") throw new Error("first argument: server or client");
  const a: Args = {
    role,
    name: "",
    port: 0,
    host: "",
    intervalMs: 200,
    timeoutMs: 5000,
    maxSeconds: 600,
    reset: false,
  };
  for (let i = 1; i < argv.length; i++) {
    const flag = argv[i];
    if (flag === "--reset") {
      a.reset = true;
      continue;
    }
    const value = argv[++i] ?? "";
    const num = () => {
      const n = Number(value);
      if (!Number.isFinite(n) || n < 0) throw new Error(`bad ${flag} ${value}`);
      return n;
    };
    switch (flag) {
      case "--name":
        a.name = value;
        break;
      case "--port":
        a.port = num();
        break;
      case "--target": {
        const m = /^(\d+\.\d+\.\d+\.\d+):(\d+)$/.exec(value);
        if (!m) throw new Error(`bad --target ${value}`);
        a.host = m[1] as string;
        a.port = Number(m[2]);
        break;
      }
      case "--interval-ms":
        a.intervalMs = Math.max(10, num());
        break;
      case "--timeout-ms":
        a.timeoutMs = Math.max(100, num());
        break;
      case "--max-seconds":
        a.maxSeconds = num();
        break;
      default:
        throw new Error(`unknown argument ${flag}`);
    }
  }
  if (role === "server" && (!a.name || !a.port)) throw new Error("server needs --name and --port");
  if (role === "client" && !a.host) throw new Error("client needs --target");
  return a;
}

const plain = (addr: string | undefined) => (addr ?? "").replace(/^::ffff:/, "");

function serve(a: Args): void {
  const server = createServer((sock) => {
    let buffered = "";
    let seq = 0;
    sock.on("data", (d) => {
      buffered += d;
      for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
        buffered = buffered.slice(nl + 1);
        seq++;
        sock.write(`${JSON.stringify({ pod: a.name, peer: plain(sock.remoteAddress), seq })}\n`);
      }
    });
    sock.on("end", () => sock.end());
    sock.on("error", () => sock.destroy());
  });
  server.listen({ port: a.port, host: "0.0.0.0" }, () => process.stdout.write("READY\n"));
}

function hold(a: Args): void {
  let sock: Socket | undefined;
  let waitingSince: number | undefined;
  let buffered = "";
  let closing = false;
  let connected = false;
  const fail = (why: string) => {
    if (closing) return;
    closing = true;
    process.stdout.write(`FAIL ${why}\n`);
    sock?.destroy();
    process.exit(1);
  };
  sock = connect({ host: a.host, port: a.port });
  sock.on("connect", () => {
    connected = true;
    process.stdout.write(`OPEN ${plain(sock?.localAddress)}:${sock?.localPort}\n`);
    const tick = setInterval(() => {
      if (closing) return clearInterval(tick);
      if (waitingSince !== undefined) {
        if (Date.now() - waitingSince > a.timeoutMs) fail("reply late");
        return;
      }
      waitingSince = Date.now();
      sock?.write("ping\n");
    }, a.intervalMs);
  });
  sock.on("data", (d) => {
    buffered += d;
    for (let nl = buffered.indexOf("\n"); nl >= 0; nl = buffered.indexOf("\n")) {
      process.stdout.write(`REPLY ${buffered.slice(0, nl)}\n`);
      buffered = buffered.slice(nl + 1);
      waitingSince = undefined;
    }
  });
  sock.on("end", () => fail("closed by the peer"));
  sock.on("error", (err: NodeJS.ErrnoException) => fail(err.code ?? err.message));
  setTimeout(() => {
    if (!connected) fail("connect timeout");
  }, a.timeoutMs).unref();
  process.on("SIGTERM", () => {
    if (closing) return;
    closing = true;
    if (a.reset) sock?.resetAndDestroy();
    else sock?.end();
    process.stdout.write("CLOSED\n");
    // Let the FIN or RST leave before the process (and the socket) goes.
    setTimeout(() => process.exit(0), 200);
  });
}

const args = parseArgs(process.argv.slice(2));
if (args.role === "server") serve(args);
else hold(args);
setTimeout(() => process.exit(0), args.maxSeconds * 1000).unref();
