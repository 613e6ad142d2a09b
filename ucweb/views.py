from django.contrib import admin
from django.http import JsonResponse
from django.shortcuts import render

from ucweb import readiness


def health(request):
    """Liveness: this process answers (nothing else is asked)."""
    return JsonResponse({"status": "ok"})


def ready(request):
    """Readiness: every part the catalog needs, 503 when it cannot do its job (ucweb.readiness)."""
    answer = readiness.report()
    return JsonResponse(answer, status=503 if answer["status"] == readiness.UNAVAILABLE else 200)


def console_home(request):
    """The console's home page (the console's login guards it, see ucweb.urls): the catalog's
    readiness, then what needs a person (catalog.admin.home, maintenance.attention) as the
    console user's principal may see it, then the catalog's pages; Django's and Celery's own
    models are one small link, for admins."""
    from catalog.admin import console, home
    from maintenance import attention

    caller = console.console_principal(request)
    apps, internals = home.split_apps(admin.site.get_app_list(request))
    return admin.site.index(request, extra_context={
        "readiness": readiness.report(), "app_list": apps, "console_principal_name": caller.name,
        "internal_apps": internals if caller.is_metastore_admin else [],
        "attention": {**home.attention(caller), **attention.attention(caller)},
    })


def landing(request):
    """`/`: where to go from here (the console, the API docs, health)."""
    return render(request, "landing.html", {"base": request.build_absolute_uri("/").rstrip("/")})
