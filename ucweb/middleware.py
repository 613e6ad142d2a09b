"""Response headers every answer of this server carries."""


def no_framing(get_response):
    """CSP `frame-ancestors 'none'`: browsers refuse to show any page of this server in a frame
    (X-Frame-Options, set by Django's middleware, says the same to older browsers). A policy the
    view set itself is kept."""

    def middleware(request):
        response = get_response(request)
        response.headers.setdefault("Content-Security-Policy", "frame-ancestors 'none'")
        return response

    return middleware
