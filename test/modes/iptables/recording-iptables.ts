// The real IptablesClient over a FakeIptables (stateful, validated against iptables-restore),
// wrapped so tests can see every restore input, count iptables-save runs, decide whether
// --random-fully is "supported" (upstream's fake says no), and fail calls on purpose.

import { FakeExec } from "../../../src/exec/testing/fake.ts";
import { createIptablesClient } from "../../../src/host/iptables/client.ts";
import { FakeIptables } from "../../../src/host/iptables/testing/fake.ts";
import {
  type IptablesClient,
  type RestoreInput,
  type RestoreOptions,
  type RulePosition,
  restoreInputText,
  type Table,
} from "../../../src/host/iptables/types.ts";
import type { IPFamily } from "../../../src/util/net/family.ts";

export class RecordingIptables implements IptablesClient {
  readonly fake = new FakeIptables({ backend: "nft" });
  readonly exec: FakeExec;
  private readonly client: IptablesClient;
  readonly restores: string[] = [];
  /** Each restore input as the proxier handed it over (pieces stay pieces). */
  readonly inputs: RestoreInput[] = [];
  saveCalls = 0;
  randomFully = false;
  /** When set, ensureRule rejects with it (e.g. a held lock). */
  ensureRuleError: Error | undefined;

  constructor(readonly family: IPFamily = "IPv4") {
    this.exec = this.fake.install(new FakeExec(), family);
    this.client = createIptablesClient({ exec: this.exec, family, backend: "nft" });
  }

  get backend() {
    return this.client.backend;
  }

  save(table: Table): Promise<string> {
    this.saveCalls++;
    return this.client.save(table);
  }
  saveAll(): Promise<string> {
    return this.client.saveAll();
  }
  restoreAll(data: RestoreInput, opts: RestoreOptions): Promise<void> {
    this.inputs.push(data);
    this.restores.push(restoreInputText(data));
    return this.client.restoreAll(data, opts);
  }
  ensureChain(table: Table, chain: string): Promise<boolean> {
    return this.client.ensureChain(table, chain);
  }
  chainExists(table: Table, chain: string): Promise<boolean> {
    return this.client.chainExists(table, chain);
  }
  flushChain(table: Table, chain: string): Promise<void> {
    return this.client.flushChain(table, chain);
  }
  deleteChain(table: Table, chain: string): Promise<void> {
    return this.client.deleteChain(table, chain);
  }
  ensureRule(position: RulePosition, table: Table, chain: string, args: readonly string[]): Promise<boolean> {
    if (this.ensureRuleError) return Promise.reject(this.ensureRuleError);
    return this.client.ensureRule(position, table, chain, args);
  }
  deleteRule(table: Table, chain: string, args: readonly string[]): Promise<void> {
    return this.client.deleteRule(table, chain, args);
  }
  version(): Promise<string> {
    return this.client.version();
  }
  async hasRandomFully(): Promise<boolean> {
    return this.randomFully;
  }

  /** Rules of one chain as iptables-save prints them (canonical form). */
  rules(table: Table, chain: string): string[] {
    return this.fake.rules(table, chain);
  }

  chains(table: Table): string[] {
    return this.fake.chains(table);
  }

  /** Everything gone, as after `iptables -F; iptables -X` everywhere or a firewalld reload. */
  flushAll(): void {
    this.fake.reset();
  }
}
