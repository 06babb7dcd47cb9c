#!/usr/bin/env bash
# Installs the Temporal Python SDK into a project-local, git-ignored venv (.venv-py-test) for the interop test
# (test/interop/python.test.ts), from the Python package index. Idempotent: when the stamp matches the pinned version
# and the SDK imports, it exits at once without touching pip.
#
# Usage: scripts/setup-python-test.sh
# Env: PYTHON (default python3) picks the interpreter. Prints the venv's python path on its last line.
set -euo pipefail

TEMPORALIO_VERSION="1.35.0"
STAMP_CONTENT="temporalio==${TEMPORALIO_VERSION}"

for arg in "$@"; do
  case "$arg" in
    -h | --help)
      awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
      exit 0
      ;;
    *)
      echo "setup-python-test: unknown argument: $arg" >&2
      exit 2
      ;;
  esac
done

cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv="$(pwd)/.venv-py-test"
stamp="$venv/.agent-sessions-stamp"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$STAMP_CONTENT" ] &&
  "$venv/bin/python" -c 'import temporalio.client' >/dev/null 2>&1; then
  echo "$venv/bin/python"
  exit 0
fi

python="${PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 || {
  echo "setup-python-test: $python not found" >&2
  exit 1
}

if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  echo "setup-python-test: creating $venv" >&2
  rm -rf "$venv"
  "$python" -m venv "$venv" >&2
fi
# The venv ignores itself, whatever the project's .gitignore says.
printf '*\n' >"$venv/.gitignore"

echo "setup-python-test: installing temporalio==${TEMPORALIO_VERSION} into .venv-py-test" >&2
PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install --quiet --no-input \
  "temporalio==${TEMPORALIO_VERSION}" >&2
"$venv/bin/python" -c 'import temporalio.client' >&2
printf '%s' "$STAMP_CONTENT" >"$stamp"
echo "$venv/bin/python"
