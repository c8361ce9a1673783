// A stateful stand-in for the nft binary, for tests: a set of "family name" tables that
// `nft list tables` prints and `nft delete table` removes, answering through a FakeExec.

import { FakeExec, fail, ok } from "../../../exec/testing/fake.ts";
import type { ExecRequest, ExecResult } from "../../../exec/types.ts";

export class FakeNft {
  /** Tables as "family name", e.g. "ip kube-proxy". */
  readonly tables: Set<string>;

  constructor(initial: Iterable<string> = []) {
    this.tables = new Set(initial);
  }

  handle(req: ExecRequest): ExecResult {
    const [verb, what, family, name] = req.args;
    if (verb === "list" && what === "tables") return ok([...this.tables].map((t) => `table ${t}\n`).join(""));
    if (verb === "delete" && what === "table") {
      if (!this.tables.delete(`${family} ${name}`)) {
        return fail(
          1,
          `Error: Could not process rule: No such file or directory\ndelete table ${family} ${name}\n`,
        );
      }
      return ok();
    }
    return fail(1, "Error: syntax error\n");
  }

  install(exec: FakeExec = new FakeExec()): FakeExec {
    return exec.on("nft", (req) => this.handle(req));
  }
}
