"""Response headers every answer of this server carries, and the metrics of each request."""

import time

from ucweb import metrics, scrape
from ucweb.mounts import ICEBERG_ROOTS


def no_framing(get_response):
    """CSP `frame-ancestors 'none'`: browsers refuse to show any page of this server in a frame
    (X-Frame-Options, set by Django's middleware, says the same to older browsers). A policy the
    view set itself is kept."""

    def middleware(request):
        response = get_response(request)
        response.headers.setdefault("Content-Security-Policy", "frame-ancestors 'none'")
        return response

    return middleware


# Route prefixes (as Django's route templates spell them) and the protocol each serves; the first
# that matches wins. Polaris's native API sits under each Iceberg root, the Delta REST API under
# Unity Catalog's.
PROTOCOLS = tuple(
    [(root.removeprefix("/") + "polaris/", "polaris") for root in ICEBERG_ROOTS]
    + [(root.removeprefix("/"), "iceberg") for root in ICEBERG_ROOTS]
    + [("api/2.1/unity-catalog/delta/v1/", "delta"), ("api/2.1/unity-catalog/delta/", "delta-legacy"),
       ("api/2.1/unity-catalog/", "unity-catalog"), ("api/2.0/settings/", "unity-catalog"),
       ("api/management/v1/", "polaris"), ("api/1.0/unity-control/scim2/", "scim"), ("admin/", "console")]
)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def protocol_of(route: str) -> str:
    return next((protocol for prefix, protocol in PROTOCOLS if route.startswith(prefix)), "other")


def request_metrics(get_response):
    """Each answer's latency by protocol, route template, method and status (ucweb.metrics): the
    template, never the path, so that table names stay out of the labels."""

    def middleware(request):
        started = time.perf_counter()
        response = get_response(request)
        match = request.resolver_match
        route = match.route if match is not None else "unmatched"
        metrics.REQUEST_SECONDS.labels(
            protocol_of(route), route, request.method if request.method in METHODS else "other",
            str(response.status_code)).observe(time.perf_counter() - started)
        scrape.observe_pool()
        return response

    return middleware


class ConsoleOnly:
    """The console's middleware (sessions, CSRF, the signed-in user, messages), run for the
    console's pages only. The API authenticates every request by its bearer token and keeps no
    session: there these four cost about a quarter of an empty request's CPU (a session cookie
    parsed, a lazy user, a CSRF check that DRF's views are exempt from anyway, the message storage)
    and do nothing. A path under one of API_PREFIXES skips them; every other path runs them as if
    they were listed in MIDDLEWARE here, their view hooks (the CSRF check) included."""

    API_PREFIXES = ("/api/", "/healthz", "/readyz", "/metrics")
    MIDDLEWARE = (
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
    )

    def __init__(self, get_response):
        from django.core.handlers.exception import convert_exception_to_response
        from django.utils.module_loading import import_string

        self.get_response = get_response
        self.view_hooks = []
        chain = get_response
        for dotted in reversed(self.MIDDLEWARE):
            middleware = import_string(dotted)(chain)
            if hasattr(middleware, "process_view"):
                self.view_hooks.insert(0, middleware.process_view)
            chain = convert_exception_to_response(middleware)
        self.console = chain

    def is_console(self, request) -> bool:
        return not request.path_info.startswith(self.API_PREFIXES)

    def __call__(self, request):
        return self.console(request) if self.is_console(request) else self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if not self.is_console(request):
            return None
        for hook in self.view_hooks:
            response = hook(request, view_func, view_args, view_kwargs)
            if response is not None:
                return response
        return None
