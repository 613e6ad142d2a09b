from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from catalog.management.commands._operator import add_operator_argument, operator_name
from catalog.models import Catalog, Metastore, Schema
from catalog.services import audit, credentials, principals


class Command(BaseCommand):
    help = "Creates the metastore, the admin principal, catalog `unity` and schema `unity.default` if missing."

    def add_arguments(self, parser):
        parser.add_argument("--admin", default="admin", help="Name of the first metastore admin principal.")
        add_operator_argument(parser)

    @transaction.atomic
    def handle(self, *args, admin, operator, **options):
        actor = operator_name(operator)
        metastore, created = Metastore.objects.get_or_create(name="ucweb")
        if created:
            audit.record(principal=actor, action="createMetastore", securable_type="metastore",
                         securable_name=metastore.name, securable_id=metastore.id)
        principals.ensure_principal(name=admin, admin=True, actor=actor)
        catalog, created = Catalog.objects.get_or_create(
            name="unity", defaults={"owner": admin, "created_by": admin, "comment": "Default catalog"}
        )
        if created:
            audit.record(principal=actor, action="createCatalog", securable_type="catalog",
                         securable_name=catalog.name, securable_id=catalog.id, details={"owner": admin})
        schema, created = Schema.objects.get_or_create(
            catalog=catalog, name="default",
            defaults={"owner": admin, "created_by": admin, "comment": "Default schema"},
        )
        if created:
            audit.record(principal=actor, action="createSchema", securable_type="schema",
                         securable_name=schema.full_name, securable_id=schema.id, details={"owner": admin})
        _install_schedule()
        reencrypted = credentials.reencrypt_published_secrets()
        if reencrypted:
            self.stdout.write(f"{reencrypted} credential secret(s) stored under a published key re-encrypted")
        self.stdout.write(
            f"metastore {metastore.id} ready; catalog unity and schema unity.default ready; "
            f"storage root {settings.UCWEB_STORAGE_ROOT}"
        )


def _install_schedule() -> None:
    """The maintenance schedule, created once; later edits in the admin are kept. In a few
    statements: saved one by one through django-celery-beat (whose every save tells beat that the
    schedule changed), the five tasks took 120."""
    from django_celery_beat.models import IntervalSchedule, PeriodicTask, PeriodicTasks

    schedule = settings.UCWEB_MAINTENANCE_SCHEDULE
    missing = set(schedule) - set(PeriodicTask.objects.filter(name__in=schedule).values_list("name", flat=True))
    if not missing:
        return
    every = {schedule[name][1] for name in missing}
    seconds = IntervalSchedule.SECONDS
    intervals = {interval.every: interval
                 for interval in IntervalSchedule.objects.filter(every__in=every, period=seconds)}
    intervals |= {interval.every: interval for interval in IntervalSchedule.objects.bulk_create(
        [IntervalSchedule(every=each, period=seconds) for each in sorted(every - set(intervals))])}
    PeriodicTask.objects.bulk_create([
        PeriodicTask(name=name, task=schedule[name][0], interval=intervals[schedule[name][1]])
        for name in sorted(missing)
    ])
    PeriodicTasks.update_changed()  # once, for all of them: what each save would have done
