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

# SQLite (the default database) does not create its parent directory.
mkdir -p "${UCWEB_VAR_DIR:-var}"

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

# --- Celery worker and beat -----------------------------------------------------------------------
# One worker process that also runs the beat schedule (publish-verify, purges, health, expiry).
# The broker is Redis when REDIS_URL is set, otherwise a folder under var/ (no server needed).
# UCWEB_NO_WORKER=1 leaves it out (docker-compose runs worker and beat as their own services).
WORKER_PID=""
if [[ -z "${UCWEB_NO_WORKER:-}" ]]; then
    "$PY" -m celery -A ucweb worker --beat --loglevel warning --concurrency 2 --quiet &
    WORKER_PID=$!
    trap 'kill "$WORKER_PID" 2>/dev/null || true' EXIT INT TERM
    echo "  Celery worker with beat started (pid $WORKER_PID)"
fi
# ------------------------------------------------------------------------------------------------

# gunicorn with its asyncio (ASGI) worker: the event loop reads requests, so clients that send
# their headers slowly hold a socket each, not one of a few threads (with gthread, 16 such clients
# stalled every other request). Each request then runs on a thread of its own, with a database
# connection from a pool of UCWEB_DB_POOL_SIZE per worker. WhiteNoise serves the static files.
ADDR="$BIND"
[[ "$ADDR" == *:* && "$ADDR" != \[* ]] && ADDR="[$ADDR]"   # IPv6 literal
# gunicorn's control socket lives with the rest of the local state, not in the home directory.
UCWEB_DB_POOL_SIZE="${UCWEB_DB_POOL_SIZE:-8}" "$PY" -m gunicorn ucweb.asgi:application --bind "$ADDR:$PORT" \
    --workers "${UCWEB_WORKERS:-2}" --worker-class asgi --worker-connections "${UCWEB_WORKER_CONNECTIONS:-1000}" \
    --control-socket "${UCWEB_VAR_DIR:-var}/gunicorn.ctl" \
    --access-logfile - --timeout 120
