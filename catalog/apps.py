from django.apps import AppConfig


class CatalogConfig(AppConfig):
    name = "catalog"
    verbose_name = "Catalog and governance"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.conf import settings

        from catalog import admin_policies  # noqa: F401  (registers the policy pages)
        from ucweb import pg_timestamps

        pg_timestamps.install()

        if settings.UCWEB_ALLOW_ANONYMOUS:
            import logging

            logging.getLogger("ucweb").warning(
                "UCWEB_ALLOW_ANONYMOUS is on: requests without a token act as a metastore admin. "
                "Never use this outside a local playground."
            )
