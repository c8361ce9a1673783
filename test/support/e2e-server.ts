// Echo server for real-kernel tests, run inside a pod namespace:
//   bun test/support/e2e-server.ts --name pod1 --tcp 8080,8081 --udp 5353 [--max-seconds 600]
// Every TCP connection gets one JSON line once the client has sent something (or at once after
// 500 ms of silence), then the server closes it; every UDP datagram gets the same JSON back.
// The reply names this pod and the peer address the server saw, for source-IP checks:
//   {"pod":"pod1","proto":"tcp","local":"203.0.113.11","port":8080,"peer":"192.0.2.1","peerPort":40000}
// Prints "READY <json>" on stdout once every socket is bound. Exits by itself after
// --max-seconds, so a lost server never outlives its test run by much.

import { createSocket } from "node:dgram";
import { createServer } from "node:net";

interface Args {
  name: string;
  tcp: number[];
  udp: number[];
  maxSeconds: number;
}

function parseArgs(argv: readonly string[]): Args {
  const args: Args = { name: "", tcp: [], udp: [], maxSeconds: 600 };
  const ports = (v: string | undefined) =>
    (v ?? "")
      .split(",")
      .filter(Boolean)
      .map((p) => {
        const n = Number(p);
        if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`bad port ${p}`);
        return n;
      });
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    i++;
    switch (flag) {
      case "--name":
        args.name = value ?? "";
        break;
      case "--tcp":
        args.tcp = ports(value);
        break;
      case "--udp":
        args.udp = ports(value);
        break;
      case "--max-seconds":
        args.maxSeconds = Number(value);
        break;
      default:
        throw new Error(`unknown argument ${flag}`);
    }
  }
  if (!args.name) throw new Error("--name is required");
  if (args.tcp.length + args.udp.length === 0) throw new Error("give --tcp and/or --udp ports");
  return args;
}

const stripV4Mapped = (a: string | undefined) => (a ?? "").replace(/^::ffff:/, "");

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const bound: string[] = [];

  for (const port of args.tcp) {
    const server = createServer((sock) => {
      let replied = false;
      const reply = () => {
        if (replied) return;
        replied = true;
        clearTimeout(silence);
        const body = {
          pod: args.name,
          proto: "tcp",
          local: stripV4Mapped(sock.localAddress),
          port,
          peer: stripV4Mapped(sock.remoteAddress),
          peerPort: sock.remotePort,
        };
        sock.end(`${JSON.stringify(body)}\n`);
      };
      const silence = setTimeout(reply, 500);
      sock.on("data", reply);
      sock.on("error", () => clearTimeout(silence));
      sock.setTimeout(5000, () => sock.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen({ port, host: "0.0.0.0" }, () => resolve());
    });
    bound.push(`tcp:${port}`);
  }

  for (const port of args.udp) {
    const sock = createSocket("udp4");
    sock.on("message", (_msg, rinfo) => {
      const body = {
        pod: args.name,
        proto: "udp",
        local: "",
        port,
        peer: rinfo.address,
        peerPort: rinfo.port,
      };
      sock.send(`${JSON.stringify(body)}\n`, rinfo.port, rinfo.address);
    });
    sock.on("error", () => {});
    await new Promise<void>((resolve, reject) => {
      sock.once("error", reject);
      sock.bind(port, "0.0.0.0", () => resolve());
    });
    bound.push(`udp:${port}`);
  }

  process.stdout.write(`READY ${JSON.stringify({ pod: args.name, bound })}\n`);
  setTimeout(() => process.exit(0), args.maxSeconds * 1000);
  process.on("SIGTERM", () => process.exit(0));
}

main().catch((err) => {
  process.stderr.write(`e2e-server: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
});
