// A per-service-port memo keyed by endpoint (IP and port) without an "ip:port" string per entry:
// the IP strings are the ones the endpoint model already holds, so a memo of a million
// endpoints costs its values and table slots, not a million more key strings.

/** Up to this many entries the memo is three small arrays instead of Maps. */
const SMALL = 32;

export class EndpointMemo<V> {
  // Small: IPs, ports and values at the same index. Large: IP -> value per port number (the
  // endpoints of one service port almost always share one port number).
  private ips: string[] = [];
  private ports: number[] = [];
  private values: V[] = [];
  private byPort: Map<number, Map<string, V>> | undefined;
  private count = 0;

  get size(): number {
    return this.count;
  }

  get(ip: string, port: number): V | undefined {
    if (this.byPort) return this.byPort.get(port)?.get(ip);
    const { ips, ports } = this;
    for (let i = 0; i < ips.length; i++) if (ips[i] === ip && ports[i] === port) return this.values[i];
    return undefined;
  }

  /** Adds an entry; the caller has checked that (ip, port) is not in the memo yet. */
  add(ip: string, port: number, value: V): void {
    this.count++;
    if (!this.byPort && this.ips.length < SMALL) {
      this.ips.push(ip);
      this.ports.push(port);
      this.values.push(value);
      return;
    }
    if (!this.byPort) {
      this.byPort = new Map();
      for (let i = 0; i < this.ips.length; i++) this.put(this.ips[i]!, this.ports[i]!, this.values[i]!);
      this.ips = [];
      this.ports = [];
      this.values = [];
    }
    this.put(ip, port, value);
  }

  /** Keeps only the entries of these endpoints (each listed at most once). */
  retain(endpoints: readonly { readonly ip: string; readonly port: number }[]): void {
    const kept: [string, number, V][] = [];
    for (const ep of endpoints) {
      const v = this.get(ep.ip, ep.port);
      if (v !== undefined) kept.push([ep.ip, ep.port, v]);
    }
    this.ips = [];
    this.ports = [];
    this.values = [];
    this.byPort = undefined;
    this.count = 0;
    for (const [ip, port, v] of kept) this.add(ip, port, v);
  }

  private put(ip: string, port: number, value: V): void {
    let m = this.byPort!.get(port);
    if (!m) {
      m = new Map();
      this.byPort!.set(port, m);
    }
    m.set(ip, value);
  }
}
