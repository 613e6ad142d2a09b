"""manage.py run_maintenance [FULL_NAME] [--operation OP]

Runs, in the foreground, what is due (every table, or the one named), or the named operation on
the named table now. Prints each run's progress and its end. Exits 0 when every run succeeded
(or nothing was due), 1 when a run failed, and 3 when none failed but one was SKIPPED (it did
nothing: no Spark for an Iceberg table, an operation that does not apply, ...): a script that
asked for maintenance learns that it did not happen."""

import re
import sys
import time

from django.core.management.base import BaseCommand, CommandError

from catalog import resolve
from maintenance import runs
from maintenance.models import MaintenancePlan
from ucweb.errors import CatalogError


class Command(BaseCommand):
    help = "Run due maintenance (or one operation on one table) in the foreground."

    def add_arguments(self, parser):
        parser.add_argument("full_name", nargs="?", help="catalog.schema.table (default: every table with due runs)")
        parser.add_argument("--operation", choices=MaintenancePlan.Operation.values,
                            help="run this operation now (needs FULL_NAME); default: what is planned")
        parser.add_argument("--limit", type=int, default=100)

    def handle(self, *args, full_name=None, operation=None, limit=100, **options):
        table = None
        if full_name:
            try:
                table = resolve.get_table_by_full_name(full_name)
            except CatalogError as exc:
                raise CommandError(str(exc)) from None
        if operation and table is None:
            raise CommandError("--operation needs the FULL_NAME of a table.")
        if operation and operation not in runs.operations_for(table):
            raise CommandError(f"{operation} does not apply to {table.full_name} "
                               f"({table.table_type} {table.data_source_format}).")

        def progress(text):
            match = re.search(r"(\d+)/(\d+)", text)
            if match and int(match.group(2)):
                done, total = int(match.group(1)), int(match.group(2))
                filled = round(30 * done / total)
                text = f"[{'#' * filled}{'.' * (30 - filled)}] {text}"
            self.stdout.write(f"  … {text}")
            self.stdout.flush()

        if operation:
            finished = [self.run_now(table, operation, progress)]
        else:
            finished = runs.run_due(table=table, limit=limit, on_progress=progress)
        failed = skipped = 0
        for plan in finished:
            seconds = plan.duration_seconds
            line = (f"{plan.operation} {plan.table.full_name}: {plan.status}"
                    f"{f' in {seconds:.1f} s' if seconds is not None else ''} — {plan.outcome}")
            if plan.status == MaintenancePlan.Status.SUCCEEDED:
                self.stdout.write(self.style.SUCCESS(line))
                before, after = plan.before or {}, plan.after or {}
                for key in ("files", "bytes", "small_file_share", "version", "snapshots"):
                    if key in before or key in after:
                        self.stdout.write(f"    {key}: {before.get(key)} -> {after.get(key)}")
            elif plan.status == MaintenancePlan.Status.SKIPPED:
                skipped += 1
                self.stdout.write(self.style.WARNING(line))
            else:
                failed += 1
                self.stdout.write(self.style.ERROR(line))
        if not finished:
            self.stdout.write("Nothing due.")
        if failed:
            sys.exit(1)
        if skipped:
            self.stderr.write(f"{skipped} run(s) SKIPPED: nothing was done for them (see the reasons above).")
            sys.exit(3)

    def run_now(self, table, operation: str, progress) -> MaintenancePlan:
        """The operation, here and now, whatever the workers do meanwhile: a run of the same table
        that a worker holds (one run per table at a time) is waited for first."""
        announced = None
        while True:
            ran = runs.run_now(table=table, operation=operation, requested_by="manage.py run_maintenance",
                               on_progress=progress)
            if ran is not None:
                return ran
            runs.reclaim_expired()  # a holder that died gives its run back once its lease expires
            holder = MaintenancePlan.objects.filter(table=table, status=MaintenancePlan.Status.RUNNING).first()
            if holder is not None and holder.id != announced:
                announced = holder.id
                self.stdout.write(f"  … waiting for {holder.operation} of {table.full_name}, which "
                                  f"{holder.lease_owner or 'a worker'} is running, to end")
                self.stdout.flush()
            time.sleep(1)

