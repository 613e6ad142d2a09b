"""The API's content negotiation answers as DRF's does, for every Accept header (its shortcut
only skips the parsing when there is nothing to choose)."""

import pytest
from django.http import Http404
from rest_framework.exceptions import NotAcceptable
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.renderers import BrowsableAPIRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from ucweb.negotiation import SingleRendererNegotiation

ACCEPTS = [None, "", "*/*", "application/json", "application/json, */*", " */* , application/json",
           "application/json; indent=4", "application/*", "text/html", "text/html, */*;q=0.1",
           "application/json;q=0.5, text/plain"]


def _answer(negotiation, accept, renderers, query=""):
    headers = {"HTTP_ACCEPT": accept} if accept is not None else {}
    request = Request(APIRequestFactory().get(f"/x{query}", **headers))
    try:
        renderer, media_type = negotiation.select_renderer(request, renderers)
    except NotAcceptable:
        return "406"
    except Http404:  # a format no renderer has
        return "404"
    return type(renderer), media_type


@pytest.mark.parametrize("accept", ACCEPTS)
@pytest.mark.parametrize("renderers", [[JSONRenderer()], [JSONRenderer(), BrowsableAPIRenderer()]])
@pytest.mark.parametrize("query", ["", "?format=json", "?format=api"])
def test_the_negotiation_answers_as_drf_does(accept, renderers, query):
    assert _answer(SingleRendererNegotiation(), accept, renderers, query) == \
        _answer(DefaultContentNegotiation(), accept, renderers, query)
