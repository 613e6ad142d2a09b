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
