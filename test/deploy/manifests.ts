// Reads deploy/kube-proxy-ts.yaml for the deploy tests: every document parsed, and the
// objects the tests look at by kind.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";

export const DEPLOY_DIR = join(import.meta.dir, "..", "..", "deploy");
export const MANIFEST = join(DEPLOY_DIR, "kube-proxy-ts.yaml");

// biome-ignore lint/suspicious/noExplicitAny: manifests are arbitrary JSON, checked by the tests
export type K8sObject = Record<string, any> & { apiVersion: string; kind: string };

export function readManifest(path = MANIFEST): K8sObject[] {
  const docs = parseAllDocuments(readFileSync(path, "utf8"));
  if (!Array.isArray(docs)) throw new Error(`${path}: not a YAML stream`);
  return docs.map((d, i) => {
    if (d.errors.length)
      throw new Error(`${path} document ${i}: ${d.errors.map((e) => e.message).join("; ")}`);
    return d.toJS() as K8sObject;
  });
}

/** The one object of `kind` in the manifest (the tests expect exactly one of each). */
export function only(objects: readonly K8sObject[], kind: string): K8sObject {
  const found = objects.filter((o) => o.kind === kind);
  if (found.length !== 1) throw new Error(`expected one ${kind}, found ${found.length}`);
  return found[0] as K8sObject;
}

export interface RbacRule {
  apiGroup: string;
  resource: string;
  verbs: string[];
}

/** A ClusterRole's rules, one entry per (apiGroup, resource), verbs merged and sorted. */
export function rbacRules(role: K8sObject): RbacRule[] {
  const byKey = new Map<string, RbacRule>();
  for (const rule of role.rules as { apiGroups: string[]; resources: string[]; verbs: string[] }[]) {
    for (const apiGroup of rule.apiGroups) {
      for (const resource of rule.resources) {
        const key = `${apiGroup}/${resource}`;
        const entry = byKey.get(key) ?? { apiGroup, resource, verbs: [] };
        entry.verbs = [...new Set([...entry.verbs, ...rule.verbs])].sort();
        byKey.set(key, entry);
      }
    }
  }
  return [...byKey.values()].sort((a, b) =>
    `${a.apiGroup}/${a.resource}`.localeCompare(`${b.apiGroup}/${b.resource}`),
  );
}
