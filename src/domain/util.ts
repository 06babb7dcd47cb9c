/** Small helpers shared by the pure domain. Deterministic; no I/O. */

/** Exhaustiveness check for closed unions: a call that type-checks is unreachable. */
export function assertNever(value: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}

/** Formats the first zod issue as "field.path: message" — the form every edge error uses. */
export function describeZodIssue(
  issues: readonly { path: readonly PropertyKey[]; message: string }[],
  root = 'payload',
): string {
  const issue = issues[0];
  if (!issue) return `${root}: invalid`;
  const field = issue.path.length
    ? issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.')
    : root;
  return `${field.replace(/\.\[/g, '[')}: ${issue.message}`;
}
