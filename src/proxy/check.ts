/** One prerequisite verdict, as printed by --dry-run (DESIGN.md: checks[]). */
export interface Check {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

export function allOk(checks: readonly Check[]): boolean {
  return checks.every((c) => c.ok);
}
