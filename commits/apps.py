from django.apps import AppConfig


class CommitsConfig(AppConfig):
    name = "commits"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from catalog.services import tables
        from commits.managed_tables import create_managed_delta_table

        tables.register_managed_table_creator(create_managed_delta_table)
