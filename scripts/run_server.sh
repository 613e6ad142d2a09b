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
# supervisors ignore SIGINT and SIGHUP, so a part stopping on request is never taken for a crash,
# and pass on only the first SIGTERM they get. The script ends once every part has, however many
# signals reach it meanwhile.
# UCWEB_NO_WORKER=1 leaves the worker and the beat out, for a deployment that runs them as
# services of their own (docker-compose.yml).
RESTART_SECONDS="${UCWEB_WORKER_RESTART_SECONDS:-5}"
MAX_QUICK_FAILURES="${UCWEB_WORKER_MAX_QUICK_FAILURES:-5}"

end_group() {  # a part's process group, once the part has ended: what it left behind ends too
    local group="$1" tenths=0
    kill -TERM -- "-$group" 2>/dev/null || return 0
    while kill -0 -- "-$group" 2>/dev/null && ((tenths < 50)); do
        sleep 0.1
        tenths=$((tenths + 1))
    done
    kill -KILL -- "-$group" 2>/dev/null || true
}

supervise() {  # name, what to call it in the log, then the command; its pid is kept in var/<name>.pid
    local name="$1" label="$2" quick=0 started status lived child="" part=""
    shift 2
    trap '' INT HUP  # the script's own stop (stop_all) reaches the supervisors as SIGTERM
    # One SIGTERM reaches the part, however many reach the supervisor: granian's main process sets
    # a threading.Event in its signal handler, and a second signal landing inside that handler
    # deadlocks it for good (the nested handler waits for the lock the first one holds).
    trap 'trap "" TERM; [[ -n "$child" ]] && kill -TERM "$child" 2>/dev/null; wait
          [[ -z "$part" ]] || end_group "$part"; exit 0' TERM
    while true; do
        started=$SECONDS
        "$PY" scripts/in_own_process_group.py "$@" &
        child=$!
        part=$child
        echo "$child" > "${UCWEB_VAR_DIR:-var}/$name.pid"
        status=0
        wait "$child" || status=$?
        # What the part leaves behind ends with it, before it is started again: granian's workers
        # when its main process was killed (they would serve on, unsupervised, on the same port),
        # the Celery worker's Spark JVM.
        end_group "$part"
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
# (Each function keeps its loop variable local: a trap runs inside whatever function it interrupts.)
stop_parts() {  # pids of supervisors
    local supervisor
    for supervisor in "$@"; do kill -TERM "$supervisor" 2>/dev/null || true; done
}
wait_until_gone() {  # pids of children: a signal the script traps ends a `wait` early, so wait again
    local child status
    for child in "$@"; do
        while kill -0 "$child" 2>/dev/null; do
            status=0
            wait "$child" 2>/dev/null || status=$?
            ((status != 127)) || break  # not a child (any more): its pid went to another process
        done
    done
}
stop_all() {
    trap - EXIT
    trap 'stop_parts "${PIDS[@]}"' INT TERM HUP
    stop_parts "${BACKGROUND[@]}"
    wait_until_gone "${BACKGROUND[@]}"
    stop_parts "${PIDS[@]}"
    wait_until_gone "${PIDS[@]}"
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
