"""The URL patterns of an API, written as tables: under one prefix, each route and the view that
answers it, so that a prefix shared by many routes is spelled once."""

from django.urls import URLPattern, path


def routes(prefix: str, views: dict[str, type]) -> list[URLPattern]:
    """A pattern for each route of `views` below `prefix`, in the table's order (Django tries them
    in that order); the route "" is the prefix itself."""
    return [path("/".join(part for part in (prefix, route) if part), view.as_view()) for route, view in views.items()]
