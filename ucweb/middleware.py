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


class ConsoleOnly:
    """The console's middleware (sessions, CSRF, the signed-in user, messages), run for the
    console's pages only. The API authenticates every request by its bearer token and keeps no
    session: there these four cost about a quarter of an empty request's CPU (a session cookie
    parsed, a lazy user, a CSRF check that DRF's views are exempt from anyway, the message storage)
    and do nothing. A path under one of API_PREFIXES skips them; every other path runs them as if
    they were listed in MIDDLEWARE here, their view hooks (the CSRF check) included."""

    API_PREFIXES = ("/api/", "/healthz", "/readyz")
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
