// Per-Service health checks (upstream's ServiceHealthServer): every LoadBalancer Service with
// externalTrafficPolicy Local gets a healthCheckNodePort, and the cloud load balancer probes
// it on each node to learn whether that node has local endpoints. 200 means "send traffic
// here" (local endpoints exist and the proxier is healthy), 503 means "skip this node".

import type { Server } from "node:http";
import type { EventRecorder } from "../../k8s/events.ts";
import type { Logger } from "../../log/logger.ts";
import { joinHostPort } from "../../util/net/host-port.ts";
import type { ServiceKey } from "../types.ts";
import {
  boundAddress,
  closeServer,
  createGoStyleServer,
  describeListenError,
  listenGo,
  reply,
} from "./http.ts";
import type { ProxierHealthChecker } from "./proxier-health.ts";

export interface ServiceHealthServerOptions {
  /** This node's name; upstream names it in bind-failure messages and events. */
  nodeName: string;
  /**
   * Node IPs matching nodePortAddresses, one listener each (none when empty); absent: every
   * local address through one dual-stack socket, as upstream does when nodePortAddresses
   * matches everything (see serviceHealthListenAddresses).
   */
  nodeAddresses?: readonly string[];
  health: ProxierHealthChecker;
  logger: Logger;
  recorder?: EventRecorder;
}

interface Instance {
  readonly key: ServiceKey;
  readonly namespace: string;
  readonly name: string;
  readonly port: number;
  readonly servers: Server[];
  /** Local endpoints on this node; a new (or re-ported) instance starts at 0, as upstream. */
  endpoints: number;
}

export interface ServiceHealthListener {
  port: number;
  /** The "ip:port"s actually bound. */
  addresses: string[];
  localEndpoints: number;
}

function splitKey(key: ServiceKey): { namespace: string; name: string } {
  const slash = key.indexOf("/");
  return slash < 0
    ? { namespace: "", name: key }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** Upstream's body, byte for byte: a tab-indented JSON document without a trailing newline. */
function body(inst: Instance, count: number, healthy: boolean): string {
  return [
    "{",
    '\t"service": {',
    `\t\t"namespace": ${JSON.stringify(inst.namespace)},`,
    `\t\t"name": ${JSON.stringify(inst.name)}`,
    "\t},",
    `\t"localEndpoints": ${count},`,
    `\t"serviceProxyHealthy": ${healthy}`,
    "}",
  ].join("\n");
}

export class ServiceHealthServer {
  private readonly services = new Map<ServiceKey, Instance>();
  private readonly addresses: readonly string[];
  // Syncs run one at a time, in call order, so a caller need not await one before the next.
  private queue: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly opts: ServiceHealthServerOptions) {
    // An empty list must stay empty: falling back to the wildcard would open the port everywhere.
    this.addresses = opts.nodeAddresses ? [...opts.nodeAddresses] : [""];
  }

  /**
   * Makes `services` (key → healthCheckNodePort) the set being served: listeners of services
   * that left or changed port are closed, new ones opened, unchanged ones left alone. A port
   * that cannot be bound is logged (and reported as an event); it is retried next sync.
   */
  syncServices(services: ReadonlyMap<ServiceKey, number>): Promise<void> {
    const wanted = new Map(services);
    return this.enqueue(async () => {
      for (const [key, inst] of this.services) {
        if (wanted.get(key) === inst.port) continue;
        this.opts.logger.v(2).info("Closing healthcheck", { service: key, port: inst.port });
        this.services.delete(key);
        await this.closeInstance(inst);
      }
      for (const [key, port] of wanted) {
        if (this.services.has(key)) {
          this.opts.logger.v(3).info("Existing healthcheck", { service: key, port });
          continue;
        }
        this.opts.logger.v(2).info("Opening healthcheck", { service: key, port });
        await this.open(key, port);
      }
    });
  }

  /** Sets local endpoint counts; services absent from `counts` drop to 0, unknown keys are ignored. */
  syncEndpoints(counts: ReadonlyMap<ServiceKey, number>): Promise<void> {
    const snapshot = new Map(counts);
    return this.enqueue(async () => {
      for (const [key, inst] of this.services) {
        const count = snapshot.get(key) ?? 0;
        if (snapshot.has(key)) {
          this.opts.logger
            .v(3)
            .info("Reporting endpoints for healthcheck", { endpointCount: count, service: key });
        }
        inst.endpoints = count;
      }
    });
  }

  /** What is being served right now, by service. */
  listeners(): Map<ServiceKey, ServiceHealthListener> {
    const out = new Map<ServiceKey, ServiceHealthListener>();
    for (const [key, inst] of this.services) {
      out.set(key, {
        port: inst.port,
        addresses: inst.servers.map(boundAddress),
        localEndpoints: inst.endpoints,
      });
    }
    return out;
  }

  /** Closes every listener; later syncs do nothing. */
  close(): Promise<void> {
    this.closed = true;
    return this.enqueue(async () => {
      const all = [...this.services.values()];
      this.services.clear();
      await Promise.all(all.map((inst) => this.closeInstance(inst)));
    }, true);
  }

  /** Runs `step` after every earlier one; never rejects (a failure is logged instead). */
  private enqueue(step: () => Promise<void>, evenIfClosed = false): Promise<void> {
    const run = this.queue.then(() => (this.closed && !evenIfClosed ? undefined : step()));
    this.queue = run.catch((err: unknown) => {
      this.opts.logger.error("Service health check sync failed", { err: String(err) });
    });
    return this.queue;
  }

  private async open(key: ServiceKey, port: number): Promise<void> {
    const inst: Instance = { key, ...splitKey(key), port, servers: [], endpoints: 0 };
    for (const ip of this.addresses) {
      const server = createGoStyleServer((_req, res) => this.answer(inst, res));
      try {
        if (!Number.isInteger(port) || port < 0 || port > 65535) {
          throw new Error(`invalid port ${port}`);
        }
        await listenGo(server, { host: ip, port });
      } catch (err) {
        // Release what did bind, so a later retry (or another service) can take the port.
        await closeServer(server);
        await this.closeInstance(inst);
        this.reportBindFailure(inst, ip, err);
        return;
      }
      inst.servers.push(server);
      this.opts.logger.v(3).info("Starting healthcheck", { service: key, address: boundAddress(server) });
    }
    this.services.set(key, inst);
  }

  private answer(inst: Instance, res: Parameters<typeof reply>[0]): void {
    if (this.services.get(inst.key) !== inst) {
      // Only reachable in the instant between a sync dropping the service and its socket closing.
      this.opts.logger.error("Received request for closed healthcheck", { service: inst.key });
      reply(res, 503, "text/plain; charset=utf-8", "");
      return;
    }
    const count = inst.endpoints;
    const healthy = this.opts.health.isHealthy();
    reply(res, count !== 0 && healthy ? 200 : 503, "application/json", body(inst, count, healthy), {
      // Lets weighted load balancers read the local endpoint count without parsing the body.
      "X-Load-Balancing-Endpoint-Weight": String(count),
    });
  }

  private reportBindFailure(inst: Instance, ip: string, err: unknown): void {
    const reason = describeListenError(joinHostPort(ip || "0.0.0.0", inst.port), err);
    const message = `node ${this.opts.nodeName} failed to start healthcheck ${JSON.stringify(inst.key)} on port ${inst.port}: ${reason}`;
    this.opts.recorder?.record({
      ref: { kind: "Service", namespace: inst.namespace, name: inst.name, uid: inst.key },
      type: "Warning",
      reason: "FailedToStartServiceHealthcheck",
      action: "Listen",
      message,
    });
    this.opts.logger.error("Failed to start healthcheck", {
      err: reason,
      node: this.opts.nodeName,
      service: inst.key,
      port: inst.port,
    });
  }

  private async closeInstance(inst: Instance): Promise<void> {
    const servers = inst.servers.splice(0);
    await Promise.all(servers.map(closeServer));
  }
}
