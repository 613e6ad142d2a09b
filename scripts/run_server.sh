#!/usr/bin/env bash
# Prepare the database and serve ucweb.
#
# Environment: UCWEB_PORT (default 8080), UCWEB_BIND (default 127.0.0.1; the Docker image sets
# 0.0.0.0), UCWEB_PYTHON (default .venv/bin/python when present, else python3), plus everything
# ucweb/settings.py reads (DATABASE_URL, UCWEB_VAR_DIR, UCWEB_STORAGE_ROOT, REDIS_URL, ...).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

PORT="${UCWEB_PORT:-8080}"
BIND="${UCWEB_BIND:-127.0.0.1}"
if [[ -n "${UCWEB_PYTHON:-}" ]]; then
    PY="$UCWEB_PYTHON"
elif [[ -x .venv/bin/python ]]; then
    PY=.venv/bin/python
else
    PY=python3
fi

# A taken port stops the start before anything changes (granian would share it: scripts/port_is_free.py).
"$PY" scripts/port_is_free.py "$BIND" "$PORT"

# SQLite (the default database) does not create its parent directory.
mkdir -p "${UCWEB_VAR_DIR:-var}"

# /metrics adds up what every process of this server (web workers, Celery worker) records in this
# folder (prometheus-client's multiprocess mode). It is this server's own; a start begins at zero.
export PROMETHEUS_MULTIPROC_DIR="${UCWEB_VAR_DIR:-var}/prometheus"
rm -rf "$PROMETHEUS_MULTIPROC_DIR"
mkdir -p "$PROMETHEUS_MULTIPROC_DIR"

"$PY" manage.py migrate --noinput
"$PY" manage.py bootstrap
"$PY" manage.py collectstatic --noinput -v 0

# Host to show in the URLs below: a wildcard bind is reachable via loopback.
case "$BIND" in
    0.0.0.0 | :: | "[::]") SHOW_HOST=127.0.0.1 ;;
    *:*) SHOW_HOST="[${BIND#[}"; SHOW_HOST="${SHOW_HOST%]}]" ;;
    *) SHOW_HOST="$BIND" ;;
esac
BASE="http://$SHOW_HOST:$PORT"

cat <<INFO

ucweb is starting on $BIND:$PORT
  Start here:   $BASE/
  Console:      $BASE/admin/
  API base:     $BASE/api/2.1/unity-catalog/
  API docs:     $BASE/api/docs/

  Get an API token (printed on the last line), then send "Authorization: Bearer <token>":
      $PY manage.py issue_token alice --admin
  Create a Django admin login:
      $PY manage.py createsuperuser

INFO

# --- Every part supervised -----------------------------------------------------------------------
# The web server, a Celery worker (threads: one Spark session serves every Iceberg run) and a beat
# that sends the maintenance schedule (every server may run one; one at a time leads, see
# maintenance/liveness.py). The broker is Redis when REDIS_URL is set, otherwise a folder under
# var/ (no server needed). The worker and the beat announce themselves once ready. A part that
# exits is started again after UCWEB_WORKER_RESTART_SECONDS; one that keeps failing to start
# (UCWEB_WORKER_MAX_QUICK_FAILURES exits within a minute of starting, one after another) stops
# ucweb with an error, rather than serving without it. The web server needs this too: granian
# restarts a killed worker process of its own, but exits when one dies again within seconds of its
# restart ("crash loop"), which would otherwise end ucweb.
# Each part runs in a process group of its own (scripts/in_own_process_group.py): a Ctrl+C or a
# stop reaches the script alone, which stops the parts one by one with a single SIGTERM each; the
# supervisors ignore SIGINT, so a part stopping on request is never taken for a crash.
# UCWEB_NO_WORKER=1 leaves the worker and the beat out, for a deployment that runs them as
# services of their own (docker-compose.yml).
RESTART_SECONDS="${UCWEB_WORKER_RESTART_SECONDS:-5}"
MAX_QUICK_FAILURES="${UCWEB_WORKER_MAX_QUICK_FAILURES:-5}"

supervise() {  # name, what to call it in the log, then the command; its pid is kept in var/<name>.pid
    local name="$1" label="$2" quick=0 started status lived child=""
    shift 2
    trap '' INT
    trap '[[ -n "$child" ]] && kill -TERM "$child" 2>/dev/null; wait; exit 0' TERM
    while true; do
        started=$SECONDS
        "$PY" scripts/in_own_process_group.py "$@" &
        child=$!
        echo "$child" > "${UCWEB_VAR_DIR:-var}/$name.pid"
        status=0
        wait "$child" || status=$?
        # What the part leaves behind stops with it: granian's workers when its main process was
        # killed (they would serve on, unsupervised), the Celery worker's Spark JVM.
        kill -TERM -- "-$child" 2>/dev/null || true
        lived=$((SECONDS - started))
        if ((lived < 60)); then quick=$((quick + 1)); else quick=0; fi
        if ((quick >= MAX_QUICK_FAILURES)); then
            echo "ucweb: ERROR: the $label exited $quick times within a minute of starting (last status" \
                 "$status); stopping ucweb. Its messages are above." >&2
            exit 1
        fi
        echo "ucweb: WARNING: the $label (pid $child) exited with status $status after ${lived} s;" \
             "starting it again in ${RESTART_SECONDS} s." >&2
        sleep "$RESTART_SECONDS" &
        child=$!
        wait "$child" || true
    done
}

# The background half stops first (a worker finishes its running task, and an Iceberg run still
# talks to this server's catalog), then the web server; a second Ctrl+C or stop meanwhile stops the
# web server too without waiting. Either way the script ends once every part has.
PIDS=()
BACKGROUND=()
stop_all() {
    trap - EXIT
    trap 'for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done' INT TERM HUP
    for pid in "${BACKGROUND[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${BACKGROUND[@]}"; do wait "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap 'stop_all' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

if [[ -z "${UCWEB_NO_WORKER:-}" ]]; then
    LOG_LEVEL="${UCWEB_WORKER_LOG_LEVEL:-warning}"
    supervise worker "Celery worker" "$PY" -m celery -A ucweb worker --pool threads --concurrency "${UCWEB_WORKER_CONCURRENCY:-4}" \
        --loglevel "$LOG_LEVEL" --without-gossip --without-mingle &
    BACKGROUND+=($!)
    supervise beat "Celery beat" "$PY" -m celery -A ucweb beat --loglevel "$LOG_LEVEL" &
    BACKGROUND+=($!)
    echo "  Starting the Celery worker and beat (each says when it is ready; see /readyz)."
fi
# ------------------------------------------------------------------------------------------------

# granian serving Django through WSGI (chosen by measurement, docs/benchmarks.md "The server"):
# granian's own I/O (Rust, not Python) reads requests, so clients that send their headers slowly
# hold a socket each, never a Python thread. Each request then runs on one of UCWEB_THREADS
# threads of its worker once its body has arrived (ucweb.request_body), with a database connection
# from a pool of UCWEB_DB_POOL_SIZE per worker. A worker that dies (killed, out of memory) is
# started again; on SIGTERM each finishes the requests it is serving, for at most
# UCWEB_STOP_SECONDS. WhiteNoise serves the static files.
UCWEB_DB_POOL_SIZE="${UCWEB_DB_POOL_SIZE:-8}" supervise server "web server" "$PY" -m granian --interface wsgi ucweb.wsgi:application \
    --host "$BIND" --port "$PORT" --workers "${UCWEB_WORKERS:-2}" \
    --blocking-threads "${UCWEB_THREADS:-32}" --respawn-failed-workers --respawn-interval 1 \
    --workers-kill-timeout "${UCWEB_STOP_SECONDS:-120}" --access-log --log-level error &
PIDS+=($!)

# Whichever part stops for good first (one that keeps failing) stops ucweb.
status=0
wait -n "${PIDS[@]}" "${BACKGROUND[@]}" || status=$?
echo "ucweb: a part stopped (status $status); stopping the rest." >&2
exit "$status"
