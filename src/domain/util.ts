/** Small helpers shared by the pure domain. Deterministic; no I/O. */

/** Exhaustiveness check for closed unions: a call that type-checks is unreachable. */
export function assertNever(value: never, what = 'value'): never {
  throw new Error(`unexpected ${what}: ${JSON.stringify(value)}`);
}

/** A zod issue's path written as a field: `tools[1]`, `message.source.kind`; `root` for the value as a whole. */
export function issueField(path: readonly PropertyKey[], root = 'payload'): string {
  if (!path.length) return root;
  const field = path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p))).join('.');
  return field.replace(/\.\[/g, '[');
}

/** Formats the first zod issue as "field.path: message" — the form every edge error uses. */
export function describeZodIssue(
  issues: readonly { path: readonly PropertyKey[]; message: string }[],
  root = 'payload',
): string {
  const issue = issues[0];
  if (!issue) return `${root}: invalid`;
  return `${issueField(issue.path, root)}: ${issue.message}`;
}
