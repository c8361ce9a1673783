// TCP -> Unix socket forwarder for real-kernel tests, run inside a namespace:
//   bun test/support/e2e-unix-forward.ts --listen 127.0.0.1:6443 --socket /tmp/x/api.sock
//       [--max-seconds 600]
// Every TCP connection accepted on --listen is joined to a new connection to --socket, bytes
// copied both ways until either side closes. This is how a kube-proxy-ts inside a network
// namespace reaches the fake API server that runs in the test process: the filesystem (and so
// the socket) is shared across namespaces, no address or link in the root namespace is needed.
// Prints "READY <host:port>" once listening; exits by itself after --max-seconds.

import { connect, createServer, type Socket } from "node:net";

interface Args {
  host: string;
  port: number;
  socket: string;
  maxSeconds: number;
}

function parseArgs(argv: readonly string[]): Args {
  const a: Partial<Args> = { maxSeconds: 600 };
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i];
    const value = argv[i + 1] ?? "";
    switch (flag) {
      case "--listen": {
        const m = /^(\d+\.\d+\.\d+\.\d+):(\d+)$/.exec(value);
        if (!m) throw new Error(`bad --listen ${value}`);
        a.host = m[1];
        a.port = Number(m[2]);
        break;
      }
      case "--socket":
        a.socket = value;
        break;
      case "--max-seconds": {
        const n = Number(value);
        if (!Number.isFinite(n) || n <= 0) throw new Error(`bad --max-seconds ${value}`);
        a.maxSeconds = n;
        break;
      }
      default:
        throw new Error(`unknown argument ${flag}`);
    }
  }
  if (!a.host || !a.port || !a.socket) throw new Error("--listen and --socket are required");
  return a as Args;
}

function join(client: Socket, socketPath: string): void {
  const upstream = connect(socketPath);
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  client.on("error", end);
  upstream.on("error", end);
  client.on("close", end);
  upstream.on("close", end);
  client.pipe(upstream);
  upstream.pipe(client);
}

function main(): void {
  const a = parseArgs(process.argv.slice(2));
  const server = createServer((client) => join(client, a.socket));
  server.on("error", (err) => {
    process.stderr.write(`e2e-unix-forward: ${err.message}\n`);
    process.exit(2);
  });
  server.listen(a.port, a.host, () => process.stdout.write(`READY ${a.host}:${a.port}\n`));
  setTimeout(() => process.exit(0), a.maxSeconds * 1000).unref();
}

try {
  main();
} catch (err) {
  process.stderr.write(`e2e-unix-forward: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
}
