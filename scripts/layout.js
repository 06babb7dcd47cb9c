#!/usr/bin/env node
/* global require, process, console, __dirname */
/* eslint-disable @typescript-eslint/no-require-imports -- a CommonJS script, like bin/ */
'use strict';
// `npm run layout` (part of `npm run check`): the measures of the code's layout (issue 34), read against the layout
// decision note, docs/decisions/2026-12-06-layout.md, so the note and the check cannot disagree.
//
// 1. Sizes: no file of code in src/workflows over 250 lines, none in src over 350, except the files the note's
//    "Size exceptions" table lists, each at most at the lines the table gives.
// 2. Duplicates: no block of more than 10 lines in src that stands again elsewhere in src (jscpd, pinned in
//    devDependencies: blocks the same token for token, or but for their strings and numbers), except between the
//    pairs of files the note's "Named duplicates" table lists.
//
// A row of either table that no longer holds (the file is within its limit, or the pair no longer shares a block)
// fails too: the note says what is true of the tree. Exits 1 with what to do; prints one line when all holds.
const { spawnSync } = require('node:child_process');
const { mkdtempSync, readdirSync, readFileSync, rmSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const NOTE = 'docs/decisions/2026-12-06-layout.md';
const CODE = /\.(ts|mts|js|mjs)$/;
const LIMITS = [
  { under: 'src/workflows/', lines: 250 },
  { under: 'src/', lines: 350 },
];
/** A duplicated block is reported from this many lines on ("longer than 10 lines"). */
const DUPLICATE_MIN_LINES = 11;

/** Files of code below `dir` (relative to the root, with forward slashes), sorted. */
function codeFiles(dir) {
  const out = [];
  const walk = (rel) => {
    for (const entry of readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const child = `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else if (entry.isFile() && CODE.test(entry.name)) out.push(child);
    }
  };
  walk(dir);
  return out.sort();
}

/** Lines of a file, as `wc -l` counts them. */
function lineCount(file) {
  const text = readFileSync(path.join(root, file), 'utf8');
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** The rows of the tables under the note's heading `title`, up to the next heading: arrays of cells, without the
 * header rows (the row above a `| --- |` rule) and the rules. */
function tableRows(note, title) {
  const lines = note.split('\n');
  const start = lines.findIndex((l) => l.startsWith('#') && l.replace(/^#+\s*/, '').trim() === title);
  if (start < 0) throw new Error(`${NOTE} has no heading "${title}"`);
  const cellsOf = (line) =>
    line
      .trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((c) => c.trim());
  const isRule = (line) => cellsOf(line).every((c) => /^:?-+:?$/.test(c));
  const rows = [];
  const section = lines.slice(start + 1);
  const stop = section.findIndex((l) => l.startsWith('#'));
  const body = stop < 0 ? section : section.slice(0, stop);
  body.forEach((line, i) => {
    if (!line.trim().startsWith('|') || isRule(line)) return;
    const next = body[i + 1];
    if (next !== undefined && next.trim().startsWith('|') && isRule(next)) return;
    rows.push(cellsOf(line));
  });
  return rows;
}

/** The path in a table cell written as `src/...`. */
function pathCell(cell) {
  const m = /^`([^`]+)`$/.exec(cell);
  return m ? m[1] : undefined;
}

function checkSizes(note, problems) {
  const exceptions = new Map();
  for (const cells of tableRows(note, 'Size exceptions')) {
    const file = pathCell(cells[0] ?? '');
    const most = Number(cells[1]);
    if (!file || !Number.isInteger(most)) {
      problems.push(
        `${NOTE}, "Size exceptions": a row must read | \`src/…\` | lines | why |, not: ${cells.join(' | ')}`,
      );
      continue;
    }
    exceptions.set(file, most);
  }
  const files = codeFiles('src');
  let over = 0;
  for (const file of files) {
    const limit = LIMITS.find((l) => file.startsWith(l.under)).lines;
    const lines = lineCount(file);
    const most = exceptions.get(file);
    if (lines <= limit) {
      if (most !== undefined)
        problems.push(
          `${file} is ${lines} lines, within its limit of ${limit}: remove its row from ${NOTE} "Size exceptions"`,
        );
      continue;
    }
    over++;
    if (most === undefined)
      problems.push(
        `${file} is ${lines} lines, over the limit of ${limit} for ${LIMITS.find((l) => file.startsWith(l.under)).under}: split it by concept, or add it with the reason to ${NOTE} "Size exceptions"`,
      );
    else if (lines > most)
      problems.push(
        `${file} is ${lines} lines, more than the ${most} that ${NOTE} "Size exceptions" allows it: split it, or raise the number with the reason`,
      );
  }
  for (const file of exceptions.keys())
    if (!files.includes(file)) problems.push(`${NOTE} "Size exceptions" lists ${file}, which does not exist`);
  return { files: files.length, over };
}

/** Blocks of more than 10 lines that stand twice in src, from jscpd's JSON report. */
function duplicatedBlocks() {
  const out = mkdtempSync(path.join(os.tmpdir(), 'agent-sessions-layout-'));
  try {
    const run = spawnSync(
      process.execPath,
      [
        require.resolve('jscpd/run-jscpd.js', { paths: [root] }),
        '--min-lines',
        String(DUPLICATE_MIN_LINES),
        '--ignore-literals',
        '--format',
        'typescript,javascript',
        '--reporters',
        'json',
        '--output',
        out,
        '--absolute',
        '--silent',
        '--no-tips',
        'src',
      ],
      { cwd: root, encoding: 'utf8', env: { ...process.env, JSCPD_NO_TIPS: '1' } },
    );
    if (run.status !== 0) throw new Error(`jscpd failed (exit ${run.status}): ${run.stderr || run.stdout}`);
    const report = JSON.parse(readFileSync(path.join(out, 'jscpd-report.json'), 'utf8'));
    const rel = (name) => path.relative(root, path.resolve(root, name)).split(path.sep).join('/');
    return report.duplicates.map((d) => ({
      a: { file: rel(d.firstFile.name), start: d.firstFile.start, end: d.firstFile.end },
      b: { file: rel(d.secondFile.name), start: d.secondFile.start, end: d.secondFile.end },
      lines: d.lines,
    }));
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
}

const pairKey = (a, b) => [a, b].sort().join(' ~ ');

function checkDuplicates(note, problems) {
  const named = new Map();
  for (const cells of tableRows(note, 'Named duplicates')) {
    const a = pathCell(cells[0] ?? '');
    const b = pathCell(cells[1] ?? '');
    if (!a || !b) {
      problems.push(
        `${NOTE}, "Named duplicates": a row must read | \`src/…\` | \`src/…\` | why |, not: ${cells.join(' | ')}`,
      );
      continue;
    }
    named.set(pairKey(a, b), false);
  }
  const blocks = duplicatedBlocks();
  for (const d of blocks) {
    const key = pairKey(d.a.file, d.b.file);
    if (named.has(key)) {
      named.set(key, true);
      continue;
    }
    problems.push(
      `${d.a.file}:${d.a.start}-${d.a.end} and ${d.b.file}:${d.b.start}-${d.b.end} share a block of ${d.lines} lines: make it one piece of code, or name the pair with the reason in ${NOTE} "Named duplicates"`,
    );
  }
  for (const [key, seen] of named)
    if (!seen)
      problems.push(
        `${NOTE} "Named duplicates" lists ${key}, which no longer share a block of more than 10 lines: remove the row`,
      );
  return { blocks: blocks.length, named: named.size };
}

function main() {
  const note = readFileSync(path.join(root, NOTE), 'utf8');
  const problems = [];
  const sizes = checkSizes(note, problems);
  const dups = checkDuplicates(note, problems);
  if (problems.length) {
    for (const p of problems) console.error(`layout: ${p}`);
    console.error(`layout: ${problems.length} problem(s); the rules and the tables are in ${NOTE}`);
    process.exit(1);
  }
  console.log(
    `layout: ${sizes.files} files of code in src, ${sizes.over} over their size limit and each listed in the note; ` +
      `${dups.blocks} duplicated block(s) of more than 10 lines, each between a pair of files the note names`,
  );
}

main();
