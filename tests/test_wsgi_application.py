"""The WSGI application `make run` serves (ucweb.wsgi under granian): a request's body is received
whole before Django runs, a body over DATA_UPLOAD_MAX_MEMORY_SIZE is refused while it is received
(in the envelope of its API), a body sent in chunks without a length reaches the view whole, and
the console's middleware runs for the console's pages only (ucweb.middleware.ConsoleOnly)."""

import io
import json

import pytest
from django.contrib.auth.models import User
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from django.test import Client, RequestFactory, override_settings

from tests.helpers import UC
from ucweb.middleware import ConsoleOnly
from ucweb.wsgi import application

LIMIT = 1024


class CountingStream:
    """A request body that counts the bytes read from it."""

    def __init__(self, data: bytes):
        self.stream = io.BytesIO(data)
        self.read_bytes = 0

    def read(self, size=-1):
        chunk = self.stream.read(size)
        self.read_bytes += len(chunk)
        return chunk


def call(method: str, path: str, body: bytes = b"", headers: dict | None = None, *, chunked=False):
    """One request through the WSGI application: (status, headers, body, bytes of the body read)."""
    stream = CountingStream(body)
    environ = RequestFactory()._base_environ(
        REQUEST_METHOD=method, PATH_INFO=path, CONTENT_TYPE="application/json", **(headers or {}))
    environ["wsgi.input"] = stream
    if chunked:
        environ["HTTP_TRANSFER_ENCODING"] = "chunked"
        environ.pop("CONTENT_LENGTH", None)
    else:
        environ["CONTENT_LENGTH"] = str(len(body))
    started = {}

    def start_response(status, response_headers, exc_info=None):
        started["status"], started["headers"] = int(status.split()[0]), dict(response_headers)

    # As Django's test client: the test's own database connection stays open past the request.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        result = application(environ, start_response)
        try:
            content = b"".join(result)
        finally:
            getattr(result, "close", lambda: None)()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    return started["status"], started["headers"], content, stream.read_bytes


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_a_declared_length_over_the_limit_is_refused_before_the_body_is_read():
    status, _, body, read = call("POST", f"{UC}/catalogs", b"x" * (LIMIT * 100))
    assert status == 413
    assert json.loads(body)["error_code"] == "REQUEST_LIMIT_EXCEEDED"
    assert read == 0


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_chunks_over_the_limit_without_a_length_stop_being_read():
    status, _, body, read = call("POST", f"{UC}/catalogs", b"x" * (LIMIT * 100), chunked=True)
    assert status == 413
    assert json.loads(body)["error_code"] == "REQUEST_LIMIT_EXCEEDED"
    assert LIMIT < read < LIMIT * 100


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=LIMIT)
def test_the_refusal_keeps_each_apis_envelope():
    for url, expected in ((f"{UC}/delta/v1/tables", b'"type":"BadRequestException"'),
                          ("/api/catalog/v1/config", b'"code":413')):
        status, _, body, _ = call("POST", url, b"x" * (LIMIT + 1))
        assert status == 413
        assert expected in body.replace(b" ", b""), body


@pytest.mark.django_db
def test_a_body_sent_in_chunks_without_a_length_reaches_the_view_whole(make_token):
    token = make_token("admin", admin=True)
    payload = json.dumps({"name": "chunked", "comment": "x" * 100}).encode()
    status, _, body, read = call("POST", f"{UC}/catalogs", payload, {"HTTP_AUTHORIZATION": f"Bearer {token}"},
                                 chunked=True)
    assert status == 200, body
    assert json.loads(body)["comment"] == "x" * 100
    assert read == len(payload)


def seen_by_the_view(path: str) -> dict:
    """What the console's middleware attached to a request for `path` by the time its view ran."""
    seen = {}

    def view(request):
        from django.http import HttpResponse

        seen.update(session=hasattr(request, "session"), user=hasattr(request, "user"),
                    messages=hasattr(request, "_messages"))
        return HttpResponse("ok")

    ConsoleOnly(view)(RequestFactory().get(path))
    return seen


def test_the_api_routes_skip_the_console_middleware():
    for path in (f"{UC}/catalogs", "/api/catalog/v1/config", "/healthz"):
        assert seen_by_the_view(path) == {"session": False, "user": False, "messages": False}, path


def test_the_console_pages_run_it():
    for path in ("/admin/", "/"):
        assert seen_by_the_view(path) == {"session": True, "user": True, "messages": True}, path


@pytest.mark.django_db
def test_the_console_still_checks_csrf_and_signs_in():
    User.objects.create_superuser("root", "root@example.com", "pw-root-1234")
    strict = Client(enforce_csrf_checks=True)
    refused = strict.post("/admin/login/", {"username": "root", "password": "pw-root-1234"})
    assert refused.status_code == 403  # no CSRF token
    page = strict.get("/admin/login/")
    token = page.cookies["csrftoken"].value
    signed_in = strict.post("/admin/login/?next=/admin/", {"username": "root", "password": "pw-root-1234",
                                                           "csrfmiddlewaretoken": token, "next": "/admin/"})
    assert signed_in.status_code == 302 and "sessionid" in signed_in.cookies
    assert strict.get("/admin/").status_code == 200
