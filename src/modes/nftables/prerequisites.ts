// Whether this node can run nftables mode, checked as upstream checks before choosing it: a
// kernel of 5.13 or later (unless KUBE_PROXY_NFTABLES_SKIP_KERNEL_VERSION_CHECK is set), an nft
// of 1.0.1 or later (older ones parse every table and can break on other software's rules), and
// a kernel that accepts the `kube-proxy` table (asked with `nft --check`, which changes nothing).
// The verdict is the same for a real run (which refuses to start) and --dry-run (exit 3).

import type { Exec } from "../../exec/types.ts";
import type { KernelClient } from "../../host/kernel/types.ts";
import { createNftClient } from "../../host/nft/client.ts";
import { NftTransaction } from "../../host/nft/transaction.ts";
import type { Check } from "../../proxy/check.ts";
import { errText } from "../../util/err-text.ts";
import type { NftIPFamily } from "../../util/net/family.ts";
import { versionAtLeast } from "../../util/version.ts";
import { KUBE_PROXY_TABLE } from "./names.ts";

export const MIN_KERNEL = "5.13";
export const MIN_NFT = "1.0.1";
export const SKIP_KERNEL_CHECK_ENV = "KUBE_PROXY_NFTABLES_SKIP_KERNEL_VERSION_CHECK";

export interface NftablesPrereqDeps {
  readonly exec: Exec;
  readonly kernel: KernelClient;
  readonly env?: Readonly<Record<string, string | undefined>>;
}

async function checkKernel(deps: NftablesPrereqDeps): Promise<Check> {
  const name = "nftables kernel version";
  const version = await deps.kernel.version();
  if ((deps.env ?? process.env)[SKIP_KERNEL_CHECK_ENV])
    return { name, ok: true, detail: `kernel ${version}: check skipped (${SKIP_KERNEL_CHECK_ENV} is set)` };
  const ok = versionAtLeast(version, MIN_KERNEL);
  const detail = ok
    ? `kernel ${version} (need >= ${MIN_KERNEL})`
    : `kube-proxy in nftables mode requires kernel ${MIN_KERNEL} or later; this is ${version}`;
  return { name, ok, detail };
}

async function checkNft(deps: NftablesPrereqDeps): Promise<{ check: Check; usable: boolean }> {
  const name = "nft version";
  let version: string | undefined;
  try {
    version = await createNftClient({ exec: deps.exec }).version();
  } catch (err) {
    return { check: { name, ok: false, detail: `nft --version failed: ${errText(err)}` }, usable: false };
  }
  if (version === undefined)
    return { check: { name, ok: false, detail: "nft is not installed" }, usable: false };
  const ok = versionAtLeast(version, MIN_NFT);
  const detail = ok
    ? `nft ${version} (need >= ${MIN_NFT})`
    : `nft ${version} is older than the required ${MIN_NFT}`;
  return { check: { name, ok, detail }, usable: true };
}

/** One check per family: can the kernel hold the table (nf_tables, the family's support)? */
async function checkTable(exec: Exec, family: NftIPFamily): Promise<Check> {
  const name = `nftables ${family} table`;
  const tx = new NftTransaction(family, KUBE_PROXY_TABLE).add({ kind: "table" });
  try {
    await createNftClient({ exec, family, table: KUBE_PROXY_TABLE }).check(tx);
    return { name, ok: true, detail: `nft --check: table ${family} ${KUBE_PROXY_TABLE} can be created` };
  } catch (err) {
    return { name, ok: false, detail: `cannot create table ${family} ${KUBE_PROXY_TABLE}: ${errText(err)}` };
  }
}

export interface NftablesPrereqResult {
  readonly ok: boolean;
  readonly checks: Check[];
}

export async function canUseNftablesProxier(deps: NftablesPrereqDeps): Promise<NftablesPrereqResult> {
  const kernel = await checkKernel(deps);
  const nft = await checkNft(deps);
  const checks = [kernel, nft.check];
  // Upstream needs one usable family; a family the kernel refuses is simply not proxied.
  if (nft.usable) {
    const tables = [await checkTable(deps.exec, "ip"), await checkTable(deps.exec, "ip6")];
    const anyTable = tables.some((t) => t.ok);
    checks.push(...tables.map((t) => (anyTable ? { ...t, ok: true } : t)));
  }
  return { ok: checks.every((c) => c.ok), checks };
}
