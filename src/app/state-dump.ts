// --dump-state: the cluster objects a run read plus the host's state, written as one --state
// file (a private file, see private-file.ts). Shared by the dry run and the real run.

import type { Exec } from "../exec/types.ts";
import { probeHostState } from "../host/host-state/probe.ts";
import type { IpsetClient } from "../host/ipset/types.ts";
import type { KernelClient } from "../host/kernel/types.ts";
import { type ObjectStore, renderStateFile, stateFileFormatFor } from "../k8s/object-store.ts";
import type { Logger } from "../log/logger.ts";
import { errText } from "../util/err-text.ts";
import { writePrivateFileSync } from "./private-file.ts";

/** Writes the dump; false (and an error logged) when the file could not be written. */
export async function dumpState(
  file: string,
  store: ObjectStore,
  host: { readonly exec: Exec; readonly kernel: KernelClient; readonly ipset: IpsetClient },
  log: Logger,
): Promise<boolean> {
  const text = renderStateFile(
    store,
    await probeHostState(host.exec, host.kernel, host.ipset),
    stateFileFormatFor(file),
  );
  try {
    writePrivateFileSync(file, text);
    log.info("Wrote cluster and host state", { file });
    return true;
  } catch (err) {
    log.error("Could not write cluster and host state", { file, err: errText(err) });
    return false;
  }
}
