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
    """The console's home page: Django's, with the catalog's readiness above the model list (the
    console's login guards it, see ucweb.urls)."""
    return admin.site.index(request, extra_context={"readiness": readiness.report()})


def landing(request):
    """`/`: where to go from here (the console, the API docs, health)."""
    return render(request, "landing.html", {"base": request.build_absolute_uri("/").rstrip("/")})
