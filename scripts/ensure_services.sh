#!/usr/bin/env bash
# Make sure what the test suite needs is there: the local PostgreSQL (127.0.0.1:5432) running,
# and the redis-server and Chromium programs installed (the worker tests start a Redis of their
# own on a free port, and no other test uses one, so no Redis server is started here).
# NATS is optional: the change-event tests start a nats-server of their own when the program is
# installed, and skip, saying so, when it is not.
# Idempotent: a PostgreSQL that already answers is left alone, a stopped one is started; missing
# ones are installed with apt-get (needs root, or passwordless sudo) first.
#
# Environment:
#   UCWEB_SKIP_SERVICES=1   do nothing (e.g. when DATABASE_URL points elsewhere)
#   UCWEB_SKIP_BROWSER=1    do not install Chromium and chromedriver (the console's browser tests)
#   PG_HOST / PG_PORT       default 127.0.0.1 / 5432
#   SERVICE_WAIT_SECONDS    how long to wait for PostgreSQL, default 30
set -euo pipefail

PG_HOST="${PG_HOST:-127.0.0.1}"
PG_PORT="${PG_PORT:-5432}"
PG_USER="${PG_USER:-postgres}"
PG_DB="${PG_DB:-ucweb}"
WAIT_SECONDS="${SERVICE_WAIT_SECONDS:-30}"

log() { echo "[services] $*"; }
die() { echo "[services] ERROR: $*" >&2; exit 1; }

if [[ "${UCWEB_SKIP_SERVICES:-}" =~ ^(1|true|yes|on)$ ]]; then
    log "UCWEB_SKIP_SERVICES is set; not touching PostgreSQL or Redis"
    exit 0
fi

# --- helpers ------------------------------------------------------------------------------------

SUDO=()
if [[ "$(id -u)" -ne 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO=(sudo -n)
    fi
fi

as_root() {
    if [[ "$(id -u)" -eq 0 || ${#SUDO[@]} -gt 0 ]]; then
        "${SUDO[@]}" "$@"
    else
        return 1
    fi
}

# Run a command as the postgres OS user (for local peer-authenticated administration).
as_postgres() {
    if [[ "$(id -un)" == "postgres" ]]; then
        "$@"
    elif command -v runuser >/dev/null 2>&1 && [[ "$(id -u)" -eq 0 ]]; then
        runuser -u postgres -- "$@"
    elif [[ ${#SUDO[@]} -gt 0 ]]; then
        sudo -n -u postgres -- "$@"
    else
        su postgres -s /bin/sh -c "$(printf '%q ' "$@")"
    fi
}

port_open() {  # host port
    (exec 3<>"/dev/tcp/$1/$2") >/dev/null 2>&1
}

pg_up() {
    if command -v pg_isready >/dev/null 2>&1; then
        pg_isready -q -h "$PG_HOST" -p "$PG_PORT" >/dev/null 2>&1
    else
        port_open "$PG_HOST" "$PG_PORT"
    fi
}

wait_for() {  # check-function
    local check="$1" i
    for ((i = 0; i < WAIT_SECONDS; i++)); do
        if "$check"; then
            return 0
        fi
        sleep 1
    done
    "$check"
}

APT_UPDATED=0
apt_install() {
    command -v apt-get >/dev/null 2>&1 || die "cannot install $* : apt-get is not available; install it by hand"
    if [[ "$(id -u)" -ne 0 && ${#SUDO[@]} -eq 0 ]]; then
        die "cannot install $* : not root and no passwordless sudo; install it by hand"
    fi
    if [[ "$APT_UPDATED" -eq 0 ]]; then
        log "apt-get update"
        as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq || die "apt-get update failed"
        APT_UPDATED=1
    fi
    log "apt-get install $*"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" \
        || die "apt-get install $* failed"
}

# --- PostgreSQL ---------------------------------------------------------------------------------

# Prints "<version> <cluster>" of the cluster configured for $PG_PORT (newest version first).
pg_cluster() {
    local line
    if command -v pg_lsclusters >/dev/null 2>&1; then
        line="$(pg_lsclusters -h 2>/dev/null | awk -v p="$PG_PORT" '$3 == p {print $1, $2}' | sort -Vr | head -n1)"
        [[ -n "$line" ]] || return 1
        echo "$line"
        return 0
    fi
    if [[ -d /etc/postgresql ]]; then
        local ver
        ver="$(ls /etc/postgresql 2>/dev/null | sort -V | tail -n1)"
        if [[ -n "$ver" && -d "/etc/postgresql/$ver/main" ]]; then
            echo "$ver main"
            return 0
        fi
    fi
    return 1
}

pg_log_tail() {
    local ver="$1" name="$2" logf="/var/log/postgresql/postgresql-$1-$2.log"
    if [[ -r "$logf" ]]; then
        echo "--- last lines of $logf ---" >&2
        tail -n 20 "$logf" >&2 || true
    fi
}

pg_start() {
    local cluster ver name
    cluster="$(pg_cluster)" || return 1
    read -r ver name <<<"$cluster"
    log "starting PostgreSQL cluster $ver/$name"
    if ! as_root pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" start; then
        # "already running" is not an error for us; the readiness wait below decides.
        log "pg_ctlcluster $ver $name start returned non-zero (checking readiness anyway)"
    fi
    if ! wait_for pg_up; then
        pg_log_tail "$ver" "$name"
        die "PostgreSQL cluster $ver/$name did not become ready on $PG_HOST:$PG_PORT within ${WAIT_SECONDS}s"
    fi
}

pg_hba_file() {
    local cluster ver name
    cluster="$(pg_cluster)" || return 1
    read -r ver name <<<"$cluster"
    [[ -f "/etc/postgresql/$ver/$name/pg_hba.conf" ]] || return 1
    echo "/etc/postgresql/$ver/$name/pg_hba.conf"
}

pg_can_connect() {
    command -v psql >/dev/null 2>&1 || return 0   # cannot check without the client; assume fine
    PGCONNECT_TIMEOUT=5 psql -w -X -q -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres \
        -c 'SELECT 1' >/dev/null 2>&1
}

# Test settings connect as "$PG_USER" without a password over TCP. A stock Debian cluster wants a
# password for 127.0.0.1, so loopback trust entries are added (only when the connection fails).
pg_ensure_access() {
    pg_can_connect && return 0
    command -v psql >/dev/null 2>&1 || return 0

    local err
    err="$(PGCONNECT_TIMEOUT=5 psql -w -X -q -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres \
        -c 'SELECT 1' 2>&1 >/dev/null || true)"

    if grep -qiE 'role .* does not exist' <<<"$err"; then
        log "creating PostgreSQL role $PG_USER (superuser)"
        as_postgres psql -X -q -p "$PG_PORT" -d postgres -c "CREATE ROLE \"$PG_USER\" LOGIN SUPERUSER" \
            || die "could not create PostgreSQL role $PG_USER"
    elif grep -qiE 'password|authentication failed|no pg_hba.conf entry' <<<"$err"; then
        local hba
        hba="$(pg_hba_file)" || die "PostgreSQL refuses $PG_USER@$PG_HOST without a password and pg_hba.conf was not found: $err"
        if ! grep -q '^# added by ensure_services.sh' "$hba"; then
            log "allowing passwordless loopback connections in $hba"
            as_root sed -i -e '1i # added by ensure_services.sh (local test database)' \
                -e '1i host    all    all    127.0.0.1/32    trust' \
                -e '1i host    all    all    ::1/128         trust' "$hba"
        fi
        as_postgres psql -X -q -p "$PG_PORT" -d postgres -c 'SELECT pg_reload_conf()' >/dev/null \
            || die "could not reload PostgreSQL configuration"
        sleep 1
    fi

    pg_can_connect || die "cannot connect to PostgreSQL as $PG_USER@$PG_HOST:$PG_PORT: $err"
}

pg_ensure_database() {
    command -v psql >/dev/null 2>&1 || return 0
    local exists
    exists="$(psql -w -X -tA -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres \
        -c "SELECT 1 FROM pg_database WHERE datname = '$PG_DB'" 2>/dev/null || true)"
    if [[ "$exists" != "1" ]]; then
        log "creating database $PG_DB"
        psql -w -X -q -h "$PG_HOST" -p "$PG_PORT" -U "$PG_USER" -d postgres \
            -c "CREATE DATABASE \"$PG_DB\"" >/dev/null || die "could not create database $PG_DB"
    fi
}

ensure_postgres() {
    if pg_up; then
        log "PostgreSQL already running on $PG_HOST:$PG_PORT"
    elif command -v pg_ctlcluster >/dev/null 2>&1 && [[ -n "$(ls /etc/postgresql 2>/dev/null)" ]]; then
        pg_cluster >/dev/null \
            || die "PostgreSQL is installed but no cluster is configured for port $PG_PORT (see pg_lsclusters; create one with: pg_createcluster <version> main -p $PG_PORT)"
        pg_start
        log "PostgreSQL started"
    else
        log "PostgreSQL is not installed; installing"
        apt_install postgresql
        # The package may have started it already (when an init system is present).
        if pg_up; then
            log "PostgreSQL came up after installation"
        else
            pg_cluster >/dev/null || die "postgresql installed but no cluster exists (try: pg_createcluster <version> main)"
            pg_start
            log "PostgreSQL installed and started"
        fi
    fi
    pg_ensure_access
    pg_ensure_database
}

# --- Redis ----------------------------------------------------------------------------------------
# Only the program: tests/celery_worker.py runs it on a port of its own.

ensure_redis() {
    if command -v redis-server >/dev/null 2>&1; then
        log "redis-server already installed"
        return 0
    fi
    log "redis-server is not installed; installing"
    apt_install redis-server
}

# --- Chromium for the console's browser tests ------------------------------------------------------
# The distribution's Chromium and chromedriver: Selenium drives them and downloads nothing.

ensure_browser() {
    if [[ "${UCWEB_SKIP_BROWSER:-}" =~ ^(1|true|yes|on)$ ]]; then
        log "UCWEB_SKIP_BROWSER is set; not installing Chromium"
        return 0
    fi
    if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
        log "Chromium and chromedriver already installed"
        return 0
    fi
    log "Chromium or chromedriver is missing; installing"
    apt_install chromium chromium-driver
}

# --- Node.js for the tests' OpenID provider (tests/idp: oidc-provider, which needs Node.js 20 or later)

ensure_node() {
    if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 \
            && [[ "$(node -p 'process.versions.node.split(".")[0]')" -ge 20 ]]; then
        log "Node.js $(node -v) and npm already installed"
        return 0
    fi
    log "Node.js 20 or later with npm is missing; installing the distribution's"
    apt_install nodejs npm
}

ensure_postgres
ensure_redis
ensure_browser
ensure_node
log "all services ready"
