"""bootstrap installs the maintenance schedule that beat runs, once: what an operator changed
afterwards in the admin stays."""

import pytest
from django.conf import settings
from django.core.management import call_command
from django_celery_beat.models import IntervalSchedule, PeriodicTask, PeriodicTasks

pytestmark = pytest.mark.django_db


def installed() -> dict:
    return {task.name: (task.task, task.interval.every, task.interval.period, task.enabled)
            for task in PeriodicTask.objects.select_related("interval")}


def test_bootstrap_installs_every_task_of_the_schedule_and_tells_beat():
    call_command("bootstrap", verbosity=0)
    assert installed() == {name: (task, seconds, IntervalSchedule.SECONDS, True)
                           for name, (task, seconds) in settings.UCWEB_MAINTENANCE_SCHEDULE.items()}
    assert PeriodicTasks.last_change() is not None, "beat reloads its schedule when this moves"


def test_bootstrap_again_keeps_what_the_operator_changed():
    call_command("bootstrap", verbosity=0)
    slower, _ = IntervalSchedule.objects.get_or_create(every=3600, period=IntervalSchedule.SECONDS)
    PeriodicTask.objects.filter(name="purge-pending").update(interval=slower, enabled=False)
    PeriodicTask.objects.filter(name="publish-verify").delete()
    changed = installed()
    intervals = IntervalSchedule.objects.count()

    call_command("bootstrap", verbosity=0)

    after = installed()
    assert after.pop("publish-verify") == (
        "maintenance.publish_verify", settings.UCWEB_MAINTENANCE_SCHEDULE["publish-verify"][1],
        IntervalSchedule.SECONDS, True), "a task that is missing is installed again"
    assert after == changed and after["purge-pending"][1:] == (3600, IntervalSchedule.SECONDS, False)
    assert IntervalSchedule.objects.count() == intervals, "the interval of the reinstalled task is reused"
