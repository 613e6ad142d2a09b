from django.apps import AppConfig


class CommitsConfig(AppConfig):
    name = "commits"
    default_auto_field = "django.db.models.BigAutoField"
