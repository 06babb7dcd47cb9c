#!/usr/bin/env bash
# The cluster tool: a real Temporal cluster on this machine (PostgreSQL 15 and the four Temporal v1.32.0 services as
# separate processes; docs/operations.md). Its code is TypeScript in scripts/cluster/ (main.ts lists the commands:
# up, down, status, env, build, kill SERVICE, restart-postgres, tls-frontend start|stop); this shim compiles it into
# .cache/cluster when a source changed (its own folder or src/, which it imports the namespace, search attributes
# and ports from) and runs it with node. No arguments: the usage.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${root}/.cache/cluster"
main="${out}/scripts/cluster/main.js"
stamp="${out}/.compiled"

mkdir -p "$out"
# One compile at a time; the lock (fd 8) is closed before node runs, so nothing the tool starts inherits it.
exec 8>"${out}.lock"
flock 8
if [ ! -f "$main" ] || [ ! -f "$stamp" ] ||
  [ -n "$(find "${root}/scripts/cluster" "${root}/src" "${root}/tsconfig.json" -newer "$stamp" \
    \( -name '*.ts' -o -name 'tsconfig.json' \) -print -quit)" ]; then
  # Type-checked by `npm run typecheck`; here only emitted (--noCheck), so an unrelated type error in src/ being
  # edited does not stop the cluster.
  touch "${stamp}.new"
  node "${root}/node_modules/typescript/bin/tsc" -p "${root}/scripts/cluster/tsconfig.json" --noCheck >&2 ||
    {
      echo "cluster: error: could not compile scripts/cluster (tsc, above)" >&2
      exit 1
    }
  mv -f "${stamp}.new" "$stamp"
fi
exec 8>&-
exec node "$main" "$@"
