// A local lint rule: no import cycle between our modules, type-only imports included (issue 34, part 2).
// `import-x/no-cycle` (4.18) always skips `import type` and has no option to count it, so a cycle made only of
// type imports went unseen. This rule follows every relative `import`/`export … from` (type-only or not) of the
// project's TypeScript files and reports an import whose target leads back to the importing file. Files other than
// the one being linted are read from disk and cached by modification time.
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/** file → { mtimeMs, imports: resolved paths } */
const cache = new Map();

function resolveFrom(file, specifier) {
  if (!specifier.startsWith('.')) return undefined;
  const base = path.resolve(path.dirname(file), specifier);
  for (const candidate of [base, `${base}.ts`, `${base}.mts`, path.join(base, 'index.ts')]) {
    try {
      if (fs.statSync(candidate).isFile() && /\.m?ts$/.test(candidate)) return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
}

function importsOf(file) {
  let stat;
  try {
    stat = fs.statSync(file);
  } catch {
    return [];
  }
  const hit = cache.get(file);
  if (hit && hit.mtimeMs === stat.mtimeMs) return hit.imports;
  const info = ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, false);
  const imports = [
    ...new Set(info.importedFiles.map((f) => resolveFrom(file, f.fileName)).filter((f) => f !== undefined)),
  ];
  cache.set(file, { mtimeMs: stat.mtimeMs, imports });
  return imports;
}

/** A path of imports from `start` back to `target`, or undefined (breadth first: the shortest). */
function routeBack(start, target) {
  const seen = new Set([start]);
  const queue = [[start]];
  while (queue.length) {
    const route = queue.shift();
    for (const next of importsOf(route[route.length - 1])) {
      if (next === target) return route;
      if (seen.has(next)) continue;
      seen.add(next);
      queue.push([...route, next]);
    }
  }
  return undefined;
}

export default {
  rules: {
    'no-type-cycle': {
      meta: {
        type: 'problem',
        docs: { description: 'no import cycle between modules, type-only imports included' },
        messages: { cycle: 'Dependency cycle (type-only imports count): {{route}}' },
        schema: [],
      },
      create(context) {
        const file = context.physicalFilename;
        const root = context.cwd;
        const check = (node) => {
          if (!node.source || typeof node.source.value !== 'string') return;
          const target = resolveFrom(file, node.source.value);
          if (!target || target === file) return;
          const route = routeBack(target, file);
          if (!route) return;
          const names = [file, ...route, file].map((f) => path.relative(root, f));
          context.report({ node, messageId: 'cycle', data: { route: names.join(' → ') } });
        };
        return {
          ImportDeclaration: check,
          ExportNamedDeclaration: check,
          ExportAllDeclaration: check,
        };
      },
    },
  },
};
