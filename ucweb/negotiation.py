"""Content negotiation for the API's views: the answer of DRF's, reached without parsing the
Accept header into media types when there is nothing to choose (one renderer, and a client that
accepts anything or exactly what it renders), which is nearly every request. Anything else (a
format override, another media type, parameters) is DRF's own negotiation."""

from rest_framework.negotiation import DefaultContentNegotiation


class SingleRendererNegotiation(DefaultContentNegotiation):
    def select_renderer(self, request, renderers, format_suffix=None):
        if len(renderers) == 1 and not format_suffix:
            renderer = renderers[0]
            accept = request.META.get("HTTP_ACCEPT")
            if (accept is None or all(token.strip() in ("*/*", renderer.media_type) for token in accept.split(","))) \
                    and self.settings.URL_FORMAT_OVERRIDE not in request.query_params:
                return renderer, renderer.media_type
        return super().select_renderer(request, renderers, format_suffix)
