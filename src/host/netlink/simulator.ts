// SimulatedNetlink: a network namespace's links and addresses behind a stand-in `ip` (iproute2 6.x),
// answering through a SimulatedExec so tests drive the real NetlinkClient and assert on devices and
// addresses. Output layout, messages and exit codes follow what fake-vs-real tests observed
// (test/host/netlink/fake-vs-real.test.ts on the host's kernel, test/vm/netlink-fake-vs-real.vm.ts
// on kernel 6.1): "RTNETLINK answers: File exists" (2) for a duplicate link, "Error: ipv4:
// Address already assigned." (2) for a duplicate address on a kernel with extended-ack address
// messages (plain "RTNETLINK answers: ..." errno text before them, see addressErrors), and in
// -batch mode the message plus "Command failed -:N", stopping at the first failure unless
// -force (exit 1 either way).

import { SimulatedExec } from "../../exec/simulated.ts";
import type { ExecResult, TextExecRequest } from "../../exec/types.ts";
import { parseCIDRInet } from "../../util/net/address.ts";
import type { IPFamily } from "../../util/net/family.ts";

export type SimulatedLinkKind = "loopback" | "dummy" | "veth" | "ether";

export interface SimulatedNetlinkOptions {
  /** false mimics a kernel without the dummy module ("Error: Unknown device type."). Default true. */
  dummySupported?: boolean;
  /**
   * "up" (default): lo is up with 127.0.0.1/8 and ::1/128, as on a node. "down": lo as a fresh
   * network namespace has it, down and without addresses.
   */
  loopback?: "up" | "down";
  /**
   * How the kernel words a refused address add or delete. "extack" (default; newer kernels):
   * "Error: ipv4: Address already assigned." / "Error: ipv4: Address not found.". "errno"
   * (kernel 6.1 and older): "RTNETLINK answers: File exists" / "RTNETLINK answers: Cannot
   * assign requested address".
   */
  addressErrors?: "extack" | "errno";
}

interface Addr {
  ip: string;
  prefix: number;
  family: IPFamily;
  scope: string;
  brd?: string;
}

interface Link {
  index: number;
  name: string;
  kind: SimulatedLinkKind;
  peer?: string;
  up: boolean;
  mac: string;
  addrs: Addr[];
}

/** Success with a message on stderr (ip's warnings). */
class IpWarning {
  constructor(readonly message: string) {}
}

/** An ip failure: message, exit code, and whether it ends a batch outright (parse errors). */
class IpFailure {
  constructor(
    readonly message: string,
    readonly code: number,
    readonly fatal = false,
  ) {}
}

interface Globals {
  oneline: boolean;
  family: IPFamily | undefined;
}

const ok = (stdout = ""): ExecResult => ({ code: 0, stdout, stderr: "" });

function scopeOf(ip: string, family: IPFamily): string {
  if (family === "IPv4") return ip.startsWith("127.") ? "host" : "global";
  if (ip === "::1") return "host";
  return /^fe[89ab]/i.test(ip) ? "link" : "global";
}

const SCOPE_RANK: Readonly<Record<string, number>> = { global: 0x0e, site: 0x05, link: 0x02, host: 0x01 };

// Kinds whose devices have IFF_NOARP: IPv6 skips duplicate address detection on them, so their
// addresses are never "tentative", even while the link is down.
const NOARP_KINDS: ReadonlySet<SimulatedLinkKind> = new Set(["loopback", "dummy"]);

export class SimulatedNetlink {
  dummySupported: boolean;
  readonly addressErrors: "extack" | "errno";
  private readonly links: Link[] = [];
  private nextIndex = 1;
  private macSeed = 0x2a;

  constructor(opts: SimulatedNetlinkOptions = {}) {
    this.dummySupported = opts.dummySupported ?? true;
    this.addressErrors = opts.addressErrors ?? "extack";
    const lo = this.createLink("lo", "loopback");
    lo.mac = "00:00:00:00:00:00";
    if ((opts.loopback ?? "up") === "up") {
      lo.up = true;
      lo.addrs.push({ ip: "127.0.0.1", prefix: 8, family: "IPv4", scope: "host" });
      lo.addrs.push({ ip: "::1", prefix: 128, family: "IPv6", scope: "host" });
    }
  }

  /** Registers this fake as the "ip" program of `exec` (a new SimulatedExec by default). */
  install(exec: SimulatedExec = new SimulatedExec()): SimulatedExec {
    return exec.on("ip", (req) => this.handle(req));
  }

  // ---- state inspection and seeding for tests ----

  /** Device names in ifindex order. */
  devices(): string[] {
    return this.links.map((l) => l.name);
  }

  hasDevice(name: string): boolean {
    return this.link(name) !== undefined;
  }

  deviceKind(name: string): SimulatedLinkKind | undefined {
    return this.link(name)?.kind;
  }

  isUp(name: string): boolean {
    return this.link(name)?.up ?? false;
  }

  /** "ip/prefix" of every address on a device, in `ip addr show` order. */
  addresses(name: string): string[] {
    const link = this.link(name);
    return link ? this.ordered(link).map((a) => `${a.ip}/${a.prefix}`) : [];
  }

  /** Adds a device (for seeding a node: "eth0" with its addresses). */
  addDevice(
    name: string,
    kind: SimulatedLinkKind = "ether",
    opts: { up?: boolean; addresses?: string[] } = {},
  ): void {
    if (this.link(name)) throw new Error(`SimulatedNetlink.addDevice: ${name} exists`);
    const link = this.createLink(name, kind);
    link.up = opts.up ?? true;
    for (const a of opts.addresses ?? []) {
      const res = this.addAddress(link, a, undefined, undefined);
      if (res instanceof IpFailure) throw new Error(`SimulatedNetlink.addDevice: ${a}: ${res.message}`);
    }
  }

  // ---- the binary ----

  handle(req: TextExecRequest): ExecResult {
    const args = [...req.args];
    const g: Globals = { oneline: false, family: undefined };
    let force = false;
    let batch: string | undefined;
    while (args.length > 0 && args[0]!.startsWith("-")) {
      const a = args.shift()!;
      if (a === "-o" || a === "-oneline") g.oneline = true;
      else if (a === "-4") g.family = "IPv4";
      else if (a === "-6") g.family = "IPv6";
      else if (a === "-f" || a === "-family") {
        const f = args.shift();
        g.family = f === "inet6" ? "IPv6" : f === "inet" ? "IPv4" : undefined;
      } else if (a === "-force") force = true;
      else if (a === "-batch" || a === "-b") batch = args.shift() ?? "";
      else if (a === "-d" || a === "-details" || a === "-s" || a === "-stats") {
        // Not reflected in the fake's output.
      } else return { code: 255, stdout: "", stderr: `Option "${a}" is unknown, try "ip -help".\n` };
    }
    if (batch !== undefined) {
      if (batch !== "-")
        return {
          code: 1,
          stdout: "",
          stderr: `Cannot open file "${batch}" for reading: No such file or directory\n`,
        };
      return this.batch(req.stdin ?? "", g, force);
    }
    const res = this.command(args, g);
    if (res instanceof IpWarning) return { code: 0, stdout: "", stderr: `${res.message}\n` };
    return res instanceof IpFailure ? { code: res.code, stdout: "", stderr: `${res.message}\n` } : ok(res);
  }

  private batch(input: string, g: Globals, force: boolean): ExecResult {
    let stdout = "";
    let stderr = "";
    let failed = false;
    const lines = input.split("\n");
    if (lines[lines.length - 1] === "") lines.pop();
    for (let i = 0; i < lines.length; i++) {
      const words = lines[i]!.replace(/#.*$/, "")
        .trim()
        .split(/\s+/)
        .filter((w) => w !== "");
      if (words.length === 0) continue;
      const res = this.command(words, g);
      if (res instanceof IpWarning) {
        stderr += `${res.message}\n`;
        continue;
      }
      if (!(res instanceof IpFailure)) {
        stdout += res;
        continue;
      }
      stderr += `${res.message}\n`;
      if (res.fatal) return { code: res.code, stdout, stderr };
      stderr += `Command failed -:${i + 1}\n`;
      failed = true;
      if (!force) break;
    }
    return { code: failed ? 1 : 0, stdout, stderr };
  }

  private command(words: readonly string[], g: Globals): string | IpFailure | IpWarning {
    const [object = "", ...rest] = words;
    if (object !== "" && "address".startsWith(object)) return this.addressCommand(rest, g);
    if (object !== "" && "link".startsWith(object)) return this.linkCommand(rest, g);
    return new IpFailure(`Object "${object}" is unknown, try "ip help".`, 255, true);
  }

  // ---- ip address ----

  private addressCommand(words: readonly string[], g: Globals): string | IpFailure | IpWarning {
    const [verb = "show", ...rest] = words;
    if (verb === "add" || verb === "del" || verb === "delete" || verb === "d") {
      let local: string | undefined;
      let dev: string | undefined;
      let scope: string | undefined;
      let brd: string | undefined;
      for (let i = 0; i < rest.length; i++) {
        const w = rest[i]!;
        if (w === "dev") dev = rest[++i];
        else if (w === "scope") scope = rest[++i];
        else if (w === "brd" || w === "broadcast") brd = rest[++i];
        else if (w === "label" || w === "valid_lft" || w === "preferred_lft") i++;
        else if (w === "nodad" || w === "noprefixroute" || w === "home") continue;
        else if (local === undefined) local = w === "local" ? rest[++i] : w;
        else return new IpFailure(`Error: either "local" is duplicate, or "${w}" is a garbage.`, 1, true);
      }
      if (local !== undefined && !parseCIDRInet(local)) {
        return new IpFailure(`Error: any valid prefix is expected rather than "${local}".`, 1, true);
      }
      // A missing "dev" is refused before anything is sent, but only for this line.
      if (dev === undefined) return new IpFailure('Not enough information: "dev" argument is required.', 1);
      const link = this.link(dev);
      if (!link) return new IpFailure(`Cannot find device "${dev}"`, 1);
      // ip sends an add without a local address; the kernel refuses it (EOPNOTSUPP).
      if (local === undefined) {
        if (verb === "add") return new IpFailure("RTNETLINK answers: Operation not supported", 2);
        return new IpFailure("Not enough information: local address is required.", 1, true);
      }
      if (verb === "add") {
        const res = this.addAddress(link, local, scope, brd);
        return res instanceof IpFailure ? res : "";
      }
      const res = this.delAddress(link, local);
      if (res instanceof IpFailure) return res;
      // An IPv4 delete without a prefix length deletes whatever prefix is there, with a warning.
      const p = parseCIDRInet(local)!;
      if (p.family === "IPv4" && !local.includes("/")) {
        return new IpWarning(
          "Warning: Executing wildcard deletion to stay compatible with old scripts.\n" +
            `         Explicitly specify the prefix length (${local}/32) to avoid this warning.\n` +
            "         This special behaviour is likely to disappear in further releases,\n" +
            "         fix your scripts!",
        );
      }
      return "";
    }
    if ("show".startsWith(verb) || "list".startsWith(verb) || verb === "lst") {
      let dev: string | undefined;
      for (let i = 0; i < rest.length; i++) {
        const w = rest[i]!;
        if (w === "dev") dev = rest[++i];
        else if (dev === undefined) dev = w;
      }
      const links = dev === undefined ? this.links : this.links.filter((l) => l.name === dev);
      if (dev !== undefined && links.length === 0) return new IpFailure(`Device "${dev}" does not exist.`, 1);
      return links.map((l) => this.formatAddrs(l, g)).join("");
    }
    if (verb === "flush") {
      const devAt = rest.indexOf("dev");
      const dev = devAt >= 0 ? rest[devAt + 1] : rest[0];
      const link = dev === undefined ? undefined : this.link(dev);
      if (!link) return new IpFailure(`Device "${dev ?? ""}" does not exist.`, 1);
      link.addrs = link.addrs.filter((a) => (g.family !== undefined ? a.family !== g.family : false));
      return "";
    }
    return new IpFailure(`Command "${verb}" is unknown, try "ip address help".`, 255, true);
  }

  private addAddress(
    link: Link,
    local: string,
    scope: string | undefined,
    brd: string | undefined,
  ): IpFailure | undefined {
    const p = parseCIDRInet(local);
    if (!p) return new IpFailure(`Error: any valid prefix is expected rather than "${local}".`, 1, true);
    const clash = link.addrs.find(
      (a) => a.family === p.family && a.ip === p.ip && (p.family === "IPv6" || a.prefix === p.prefix),
    );
    if (clash) {
      if (this.addressErrors === "errno") return new IpFailure("RTNETLINK answers: File exists", 2);
      return new IpFailure(
        p.family === "IPv4"
          ? "Error: ipv4: Address already assigned."
          : "Error: ipv6: address already assigned.",
        2,
      );
    }
    const addr: Addr = {
      ip: p.ip,
      prefix: p.prefix,
      family: p.family,
      scope: scope ?? scopeOf(p.ip, p.family),
    };
    if (brd !== undefined && brd !== "+") addr.brd = brd;
    if (p.family === "IPv4") {
      link.addrs.push(addr);
    } else {
      // IPv6 keeps its list by scope (widest first), newest first within a scope.
      const rank = SCOPE_RANK[addr.scope] ?? 0;
      const at = link.addrs.findIndex((a) => a.family === "IPv6" && (SCOPE_RANK[a.scope] ?? 0) <= rank);
      if (at < 0) link.addrs.push(addr);
      else link.addrs.splice(at, 0, addr);
    }
    return undefined;
  }

  private delAddress(link: Link, local: string): IpFailure | undefined {
    const p = parseCIDRInet(local);
    if (!p) return new IpFailure(`Error: any valid prefix is expected rather than "${local}".`, 1, true);
    // Only IPv4 has the wildcard delete; a bare IPv6 address means /128.
    const bare = !local.includes("/") && p.family === "IPv4";
    const prefix = local.includes("/") ? p.prefix : 128;
    const at = link.addrs.findIndex(
      (a) => a.family === p.family && a.ip === p.ip && (bare || a.prefix === prefix),
    );
    if (at < 0) {
      if (this.addressErrors === "errno")
        return new IpFailure("RTNETLINK answers: Cannot assign requested address", 2);
      return new IpFailure(
        p.family === "IPv4" ? "Error: ipv4: Address not found." : "Error: ipv6: address not found.",
        2,
      );
    }
    link.addrs.splice(at, 1);
    return undefined;
  }

  private ordered(link: Link): Addr[] {
    return [
      ...link.addrs.filter((a) => a.family === "IPv4"),
      ...link.addrs.filter((a) => a.family === "IPv6"),
    ];
  }

  private formatAddrs(link: Link, g: Globals): string {
    const addrs = this.ordered(link).filter((a) => g.family === undefined || a.family === g.family);
    const lines: string[] = [];
    if (!g.oneline) {
      if (addrs.length === 0 && g.family !== undefined) return "";
      lines.push(
        this.linkHeader(link),
        `    link/${link.kind === "loopback" ? "loopback" : "ether"} ${link.mac} brd ${link.kind === "loopback" ? "00:00:00:00:00:00" : "ff:ff:ff:ff:ff:ff"}`,
      );
    }
    for (const a of addrs) {
      const brd = a.brd !== undefined ? ` brd ${a.brd}` : "";
      // IPv6 on a down link stays tentative (duplicate address detection cannot run), except on
      // NOARP devices such as dummies, which skip detection altogether.
      const flags =
        a.family === "IPv6" && !link.up && a.scope !== "host" && !NOARP_KINDS.has(link.kind)
          ? "tentative "
          : "";
      const head =
        a.family === "IPv4"
          ? `inet ${a.ip}/${a.prefix}${brd} scope ${a.scope} ${link.name}`
          : `inet6 ${a.ip}/${a.prefix} scope ${a.scope} ${flags}`;
      if (g.oneline)
        lines.push(`${link.index}: ${link.name}    ${head}\\       valid_lft forever preferred_lft forever`);
      else lines.push(`    ${head}`, "       valid_lft forever preferred_lft forever");
    }
    return lines.length === 0 ? "" : `${lines.join("\n")}\n`;
  }

  // ---- ip link ----

  private linkCommand(words: readonly string[], g: Globals): string | IpFailure {
    const [verb = "show", ...rest] = words;
    if (verb === "add") {
      let name: string | undefined;
      let type: string | undefined;
      let peer: string | undefined;
      for (let i = 0; i < rest.length; i++) {
        const w = rest[i]!;
        if (w === "name" || w === "dev") name = rest[++i];
        else if (w === "type") {
          type = rest[++i];
          // Everything after the type belongs to the type ("peer name v1").
          const tail = rest.slice(i + 1);
          const p = tail.indexOf("name");
          if (type === "veth" && tail[0] === "peer" && p >= 0) peer = tail[p + 1];
          break;
        } else if (name === undefined) name = w;
      }
      if (name === undefined)
        return new IpFailure('Not enough information: "dev" argument is required.', 2, true);
      if (type !== "dummy" && type !== "veth") return new IpFailure("Error: Unknown device type.", 2);
      if (type === "dummy" && !this.dummySupported) return new IpFailure("Error: Unknown device type.", 2);
      if (this.link(name) || (peer !== undefined && this.link(peer)))
        return new IpFailure("RTNETLINK answers: File exists", 2);
      if (type === "veth") {
        const peerName = peer ?? `veth${this.nextIndex}`;
        const p = this.createLink(peerName, "veth");
        const l = this.createLink(name, "veth");
        p.peer = name;
        l.peer = peerName;
      } else {
        this.createLink(name, "dummy");
      }
      return "";
    }
    if (verb === "del" || verb === "delete") {
      const name = rest[0] === "dev" ? rest[1] : rest[0];
      const link = name === undefined ? undefined : this.link(name);
      if (!link) return new IpFailure(`Cannot find device "${name ?? ""}"`, 1);
      if (link.kind === "loopback") return new IpFailure("RTNETLINK answers: Operation not supported", 2);
      this.removeLink(link.name);
      if (link.peer !== undefined) this.removeLink(link.peer);
      return "";
    }
    if (verb === "set") {
      const name = rest[0] === "dev" ? rest[1] : rest[0];
      const link = name === undefined ? undefined : this.link(name);
      if (!link) return new IpFailure(`Cannot find device "${name ?? ""}"`, 1);
      if (rest.includes("up")) link.up = true;
      if (rest.includes("down")) link.up = false;
      return "";
    }
    if ("show".startsWith(verb) || "list".startsWith(verb)) {
      const name = rest[0] === "dev" ? rest[1] : rest[0];
      const links = name === undefined ? this.links : this.links.filter((l) => l.name === name);
      if (name !== undefined && links.length === 0)
        return new IpFailure(`Device "${name}" does not exist.`, 1);
      return links
        .map((l) => {
          const second = `link/${l.kind === "loopback" ? "loopback" : "ether"} ${l.mac} brd ${l.kind === "loopback" ? "00:00:00:00:00:00" : "ff:ff:ff:ff:ff:ff"}`;
          const head = this.linkHeader(l).replace(" group default", " mode DEFAULT group default");
          return g.oneline ? `${head}\\    ${second}\n` : `${head}\n    ${second}\n`;
        })
        .join("");
    }
    return new IpFailure(`Command "${verb}" is unknown, try "ip link help".`, 255, true);
  }

  private linkHeader(l: Link): string {
    const flags =
      l.kind === "loopback"
        ? l.up
          ? "LOOPBACK,UP,LOWER_UP"
          : "LOOPBACK"
        : l.kind === "dummy"
          ? l.up
            ? "BROADCAST,NOARP,UP,LOWER_UP"
            : "BROADCAST,NOARP"
          : l.up
            ? "BROADCAST,MULTICAST,UP,LOWER_UP"
            : "BROADCAST,MULTICAST";
    const name = l.peer !== undefined ? `${l.name}@${l.peer}` : l.name;
    const state = l.kind === "loopback" ? (l.up ? "UNKNOWN" : "DOWN") : l.up ? "UP" : "DOWN";
    return `${l.index}: ${name}: <${flags}> mtu ${l.kind === "loopback" ? 65536 : 1500} qdisc noop state ${state} group default qlen 1000`;
  }

  // ---- helpers ----

  private link(name: string): Link | undefined {
    return this.links.find((l) => l.name === name);
  }

  private createLink(name: string, kind: SimulatedLinkKind): Link {
    const mac = Array.from(
      { length: 6 },
      (_, i) => (this.macSeed * (i + 7) + this.nextIndex * 13) & 0xff & (i === 0 ? 0xfe : 0xff),
    )
      .map((b) => b.toString(16).padStart(2, "0"))
      .join(":");
    this.macSeed = (this.macSeed * 31 + 17) & 0xffff;
    const link: Link = { index: this.nextIndex++, name, kind, up: false, mac, addrs: [] };
    this.links.push(link);
    return link;
  }

  private removeLink(name: string): void {
    const at = this.links.findIndex((l) => l.name === name);
    if (at >= 0) this.links.splice(at, 1);
  }
}

export function createSimulatedNetlink(opts: SimulatedNetlinkOptions = {}): SimulatedNetlink {
  return new SimulatedNetlink(opts);
}
