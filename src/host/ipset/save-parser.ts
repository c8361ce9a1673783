// A reader of `ipset save` output: every set with its spec, entries and entry comments.

import type { InetFamily } from "../../util/net/family.ts";
import { IpsetParseError } from "./errors.ts";
import { IPSET_TYPES, type IpsetSet, type IpsetSetSpec, type IpsetType } from "./types.ts";

/** Splits an ipset line into words; double quotes group (comments may hold blanks). */
export function ipsetWords(line: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|(\S+)/g;
  for (let m = re.exec(line); m !== null; m = re.exec(line)) {
    out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, "$1") : m[2]!);
  }
  return out;
}

const TYPE_SET: ReadonlySet<string> = new Set(IPSET_TYPES);

/**
 * Parses `ipset save` output. Sets of types kube-proxy does not use are kept (type as printed)
 * so nothing on the host is invisible; options beyond family/hashsize/maxelem/range are ignored.
 */
export function parseIpsetSave(text: string): Map<string, IpsetSet> {
  const sets = new Map<string, { spec: IpsetSetSpec; entries: Set<string>; comments: Map<string, string> }>();
  text.split("\n").forEach((raw, i) => {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) return;
    const words = ipsetWords(line);
    const [verb, name, third] = words;
    if (verb === "create" && name && third) {
      let family: InetFamily = "inet";
      let hashSize: number | undefined;
      let maxElem: number | undefined;
      let range: string | undefined;
      for (let j = 3; j < words.length; j++) {
        const w = words[j];
        const v = words[j + 1];
        if (w === "family" && (v === "inet" || v === "inet6")) family = v;
        else if (w === "hashsize" && v) hashSize = Number(v);
        else if (w === "maxelem" && v) maxElem = Number(v);
        else if (w === "range" && v) range = v;
      }
      const type = third as IpsetType;
      const spec: IpsetSetSpec = {
        name,
        type,
        family,
        comment: "",
        ...(hashSize !== undefined ? { hashSize } : {}),
        ...(maxElem !== undefined ? { maxElem } : {}),
        ...(range !== undefined ? { range } : {}),
      };
      if (!TYPE_SET.has(type) && !third.includes(":"))
        throw new IpsetParseError(i + 1, raw, "unknown set type");
      sets.set(name, { spec, entries: new Set(), comments: new Map() });
      return;
    }
    if (verb === "add" && name && third) {
      const set = sets.get(name);
      if (!set) throw new IpsetParseError(i + 1, raw, "entry of a set not created before");
      set.entries.add(third);
      const c = words.indexOf("comment", 3);
      if (c >= 0 && words[c + 1] !== undefined) set.comments.set(third, words[c + 1]!);
      return;
    }
    throw new IpsetParseError(i + 1, raw, "unrecognised line");
  });
  const out = new Map<string, IpsetSet>();
  for (const [name, s] of sets) {
    out.set(name, s.comments.size > 0 ? s : { spec: s.spec, entries: s.entries });
  }
  return out;
}
