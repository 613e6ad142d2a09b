"""The ASGI handler `make run` serves (ucweb.asgi): each request runs on one thread from
request_started to request_finished, errors answer the API's envelope, streaming responses stream,
and a body over DATA_UPLOAD_MAX_MEMORY_SIZE is refused while it is received, not after it has been
buffered."""

import asyncio
import json
import os
import subprocess
import sys
import threading

from django.core.signals import request_finished, request_started
from django.http import HttpResponse, StreamingHttpResponse
from django.test import override_settings
from django.urls import path
from rest_framework.response import Response
from rest_framework.views import APIView

from tests.helpers import UC
from ucweb import errors
from ucweb.asgi import SynchronousChainASGIHandler

LIMIT = 1024
threads_seen: dict[str, int] = {}


def recording_middleware(get_response):
    def middleware(request):
        threads_seen["middleware"] = threading.get_ident()
        return get_response(request)

    return middleware


class Recorded(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    def get(self, request):
        threads_seen["view"] = threading.get_ident()
        return Response({"ok": True})


class Raising(APIView):
    authentication_classes: list = []
    permission_classes: list = []

    def get(self, request):
        raise errors.NotFound("Nothing here.")


def streamed(request):
    return StreamingHttpResponse(f"part {n};".encode() for n in range(3))


both_inside = threading.Barrier(2)
blocking_entered, blocking_released = threading.Event(), threading.Event()


def blocking(request):
    """Holds its thread until the test releases it (a view stuck on a row lock, say)."""
    threads_seen["blocking"] = threading.get_ident()
    blocking_entered.set()
    blocking_released.wait(timeout=60)
    return HttpResponse("late")


def meeting(request):
    """Answers once two requests are inside views at the same time."""
    both_inside.wait(timeout=60)
    return HttpResponse(str(threading.get_ident()))


urlpatterns = [
    path("blocking", blocking),
    path("meeting", meeting),
    path("recorded", Recorded.as_view()),
    path("raising", Raising.as_view()),
    path("streamed", streamed),
]


def scope_for(method: str, url: str, headers=()) -> dict:
    return {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
            "scheme": "http", "path": url, "raw_path": url.encode(), "query_string": b"", "root_path": "",
            "headers": [(b"host", b"testserver"), *headers], "client": ("127.0.0.1", 1), "server": ("testserver", 80)}


def serve(application, scope, chunks: list[bytes]) -> tuple[list[dict], int]:
    """Runs one request; returns the messages sent and how many body chunks the handler received."""
    pending = [{"type": "http.request", "body": chunk, "more_body": n < len(chunks) - 1}
               for n, chunk in enumerate(chunks)] or [{"type": "http.request", "body": b""}]
    received = 0
    sent: list[dict] = []

    async def receive():
        nonlocal received
        if received < len(pending):
            received += 1
            return pending[received - 1]
        await asyncio.Event().wait()  # the client keeps the connection open

    async def send(message):
        sent.append(message)

    asyncio.run(application(scope, receive, send))
    return sent, received


def status_and_body(sent: list[dict]) -> tuple[int, bytes]:
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


@override_settings(ROOT_URLCONF=__name__,
                   MIDDLEWARE=["tests.test_asgi_handler.recording_middleware"])
def test_the_signals_middleware_and_view_run_on_one_thread_per_request():
    application = SynchronousChainASGIHandler()

    def on_started(**kwargs):
        threads_seen["started"] = threading.get_ident()

    def on_finished(**kwargs):
        threads_seen["finished"] = threading.get_ident()

    request_started.connect(on_started)
    request_finished.connect(on_finished)
    views = []
    try:
        for _ in range(3):
            threads_seen.clear()
            status, _ = status_and_body(serve(application, scope_for("GET", "/recorded"), [])[0])
            assert status == 200
            assert set(threads_seen) == {"started", "middleware", "view", "finished"}
            assert len(set(threads_seen.values())) == 1, threads_seen
            assert threads_seen["view"] != threading.get_ident()
            views.append(threads_seen["view"])
    finally:
        request_started.disconnect(on_started)
        request_finished.disconnect(on_finished)
    assert len(set(views)) == 1, "one request after the other: the thread is kept, not started anew"


@override_settings(ROOT_URLCONF=__name__)
def test_requests_in_flight_together_run_on_threads_of_their_own():
    application = SynchronousChainASGIHandler()
    both_inside.reset()

    async def two_at_once():
        (first, sent_a), (second, sent_b) = one_request(application, "/meeting"), one_request(application, "/meeting")
        await asyncio.gather(first, second)
        return status_and_body(sent_a), status_and_body(sent_b)

    (status_a, thread_a), (status_b, thread_b) = asyncio.run(two_at_once())
    assert status_a == status_b == 200  # neither waited for the other's thread
    assert thread_a != thread_b


def one_request(application, url: str):
    """The coroutine of one GET of `url` whose client stays connected, and the messages it sends."""
    sent, asked = [], []

    async def receive():
        asked.append(True)
        if len(asked) == 1:
            return {"type": "http.request", "body": b""}
        await asyncio.Event().wait()

    async def send(message):
        sent.append(message)

    return application(scope_for("GET", url), receive, send), sent


@override_settings(ROOT_URLCONF=__name__)
def test_a_cancelled_request_keeps_its_thread_until_the_view_is_done():
    """The server cancels a request whose client left while its view still runs: the next request
    must not be given that busy thread (it would wait behind the view)."""
    application = SynchronousChainASGIHandler()
    blocking_entered.clear()
    blocking_released.clear()
    threads_seen.clear()

    async def scenario():
        stuck, _ = one_request(application, "/blocking")
        stuck = asyncio.create_task(stuck)
        await asyncio.get_running_loop().run_in_executor(None, blocking_entered.wait, 60)
        stuck.cancel()
        await asyncio.gather(stuck, return_exceptions=True)
        next_request, sent = one_request(application, "/recorded")
        try:
            await asyncio.wait_for(next_request, timeout=60)
        finally:
            blocking_released.set()
        return sent

    sent = asyncio.run(scenario())
    assert status_and_body(sent)[0] == 200
    assert threads_seen["view"] != threads_seen["blocking"]


@override_settings(ROOT_URLCONF=__name__)
def test_a_view_raising_answers_the_error_envelope():
    status, body = status_and_body(serve(SynchronousChainASGIHandler(), scope_for("GET", "/raising"), [])[0])
    assert status == 404
    assert b'"error_code":"NOT_FOUND"' in body.replace(b" ", b"")


@override_settings(ROOT_URLCONF=__name__)
def test_a_streaming_response_streams():
    sent, _ = serve(SynchronousChainASGIHandler(), scope_for("GET", "/streamed"), [])
    parts = [m["body"] for m in sent if m["type"] == "http.response.body" and m.get("body")]
    assert parts == [b"part 0;", b"part 1;", b"part 2;"]


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_read():
    scope = scope_for("POST", f"{UC}/catalogs", [(b"content-length", str(LIMIT * 100).encode()),
                                                 (b"content-type", b"application/json")])
    sent, received = serve(SynchronousChainASGIHandler(), scope, [b"x" * LIMIT] * 100)
    status, body = status_and_body(sent)
    assert status == 413
    assert b"REQUEST_LIMIT_EXCEEDED" in body
    assert received == 0


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_chunks_over_the_limit_without_a_length_stop_being_read():
    scope = scope_for("POST", f"{UC}/catalogs", [(b"content-type", b"application/json")])
    sent, received = serve(SynchronousChainASGIHandler(), scope, [b"x" * (LIMIT // 4)] * 100)
    status, body = status_and_body(sent)
    assert status == 413
    assert b"REQUEST_LIMIT_EXCEEDED" in body
    assert received == 5  # the chunk that crossed the limit is the last one received


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_the_refusal_keeps_each_apis_envelope():
    for url, expected in ((f"{UC}/delta/v1/tables", b'"type":"BadRequestException"'),
                          ("/api/catalog/v1/config", b'"code":413')):
        scope = scope_for("POST", url, [(b"content-length", str(LIMIT + 1).encode())])
        status, body = status_and_body(serve(SynchronousChainASGIHandler(), scope, [b"x" * (LIMIT + 1)])[0])
        assert status == 413
        assert expected in body.replace(b" ", b""), body


def connection_settings(module: str, **environment) -> dict:
    """CONN_MAX_AGE and whether the pool is on once `module` is imported, in a fresh process."""
    code = (f"import json, {module}; from django.conf import settings; d = settings.DATABASES['default']; "
            "print(json.dumps([d['CONN_MAX_AGE'], 'pool' in d.get('OPTIONS', {})]))")
    env = {key: value for key, value in os.environ.items()
           if key not in ("UCWEB_DB_CONN_MAX_AGE", "UCWEB_DB_POOL_SIZE", "DJANGO_SETTINGS_MODULE")}
    env.update(DATABASE_URL="postgres://postgres@127.0.0.1:5432/ucweb", **environment)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    max_age, pool = json.loads(done.stdout.strip().splitlines()[-1])
    return {"max_age": max_age, "pool": pool}


def test_the_asgi_application_keeps_no_connection_past_its_request_thread():
    assert connection_settings("ucweb.asgi", UCWEB_DB_POOL_SIZE="0") == {"max_age": 0, "pool": False}
    assert connection_settings("ucweb.asgi", UCWEB_DB_POOL_SIZE="4") == {"max_age": 0, "pool": True}
    assert connection_settings("ucweb.asgi", UCWEB_DB_CONN_MAX_AGE="30")["max_age"] == 30  # said explicitly
    # the other processes (WSGI, Celery) keep their threads and their persistent connections
    assert connection_settings("ucweb.wsgi", UCWEB_DB_POOL_SIZE="0") == {"max_age": 60, "pool": False}
