from django.http import JsonResponse
from django.shortcuts import render


def health(request):
    return JsonResponse({"status": "ok"})


def landing(request):
    """`/`: where to go from here (the console, the API docs, health)."""
    return render(request, "landing.html", {"base": request.build_absolute_uri("/").rstrip("/")})
