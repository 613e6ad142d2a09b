"""What the maintenance app does when the domain announces something (catalog.signals)."""

from maintenance import nudges
from maintenance.purge import request_purge


def purge_dropped_securable(sender, *, location: str, reason: str, requested_by: str = "", **kwargs) -> None:
    request_purge(url=location, reason=reason, requested_by=requested_by)


def verify_publication(sender, *, table_id: str, **kwargs) -> None:
    nudges.enqueue("maintenance.publish_verify_table", table_id)


def deliver_change_events(sender, **kwargs) -> None:
    nudges.enqueue_coalesced("maintenance.deliver_change_events")
