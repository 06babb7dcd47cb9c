/**
 * The lint rule `local/no-type-cycle` (eslint-rules/no-type-cycle.mjs, issue 34): an import cycle fails lint even
 * when every import in it is type-only, which `import-x/no-cycle` does not see.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ESLint } from 'eslint';
import tseslint from 'typescript-eslint';
import { afterAll, describe, expect, it } from 'vitest';

const dir = mkdtempSync(path.join(tmpdir(), 'type-cycle-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function lint(files: Record<string, string>): Promise<string[]> {
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  const rulePath = path.join(__dirname, '..', '..', 'eslint-rules', 'no-type-cycle.mjs');
  const { default: local } = (await import(rulePath)) as { default: ESLint.Plugin };
  const eslint = new ESLint({
    cwd: dir,
    overrideConfigFile: true,
    overrideConfig: [
      {
        files: ['**/*.ts'],
        languageOptions: { parser: tseslint.parser },
        plugins: { local },
        rules: { 'local/no-type-cycle': 'error' },
      },
    ],
  });
  const results = await eslint.lintFiles(Object.keys(files).map((f) => path.join(dir, f)));
  return results.flatMap((r) => r.messages.map((m) => `${path.basename(r.filePath)}: ${m.message}`));
}

describe('local/no-type-cycle', () => {
  it('reports a cycle made only of type imports, on both sides', async () => {
    const problems = await lint({
      'a.ts': "import type { B } from './b';\nexport type A = { b?: B };\n",
      'b.ts': "import type { A } from './a';\nexport type B = { a?: A };\n",
    });
    expect(problems).toEqual([
      'a.ts: Dependency cycle (type-only imports count): a.ts → b.ts → a.ts',
      'b.ts: Dependency cycle (type-only imports count): b.ts → a.ts → b.ts',
    ]);
  });

  it('passes imports that do not lead back', async () => {
    const problems = await lint({
      'leaf.ts': 'export type Leaf = { id: string };\n',
      'user.ts': "import type { Leaf } from './leaf';\nexport type User = { leaf: Leaf };\n",
    });
    expect(problems).toEqual([]);
  });
});
