from django.apps import AppConfig


class MaintenanceConfig(AppConfig):
    name = "maintenance"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The domain announces what maintenance acts on (catalog.signals); it never calls it.
        from catalog.signals import change_events_written, publication_due, securable_dropped
        from maintenance import receivers

        securable_dropped.connect(receivers.purge_dropped_securable, dispatch_uid="maintenance.purge")
        publication_due.connect(receivers.verify_publication, dispatch_uid="maintenance.publish")
        change_events_written.connect(receivers.deliver_change_events, dispatch_uid="maintenance.change_events")

        # The tasks the nudges send by name (maintenance.nudges), registered in every process.
        from maintenance import tasks  # noqa: F401

        # A worker keeps a heartbeat row that readiness reads (maintenance.liveness).
        from celery.signals import worker_ready, worker_shutdown

        from maintenance import liveness

        worker_ready.connect(liveness.worker_ready, dispatch_uid="maintenance.heartbeat")
        worker_shutdown.connect(liveness.worker_shutdown, dispatch_uid="maintenance.heartbeat")
