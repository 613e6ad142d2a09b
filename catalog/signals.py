"""What the domain announces, for the apps that act on it: the maintenance app listens, and the
catalog and commits never import it.

`securable_dropped`: a securable whose files were the catalog's to delete (a managed table,
volume, registered model or model version, or a table dropped with purge) is gone. Sent inside
the dropping transaction with `location` (the securable's own), `reason` and `requested_by`. A
receiver records what it will do in that same transaction, so a drop that rolls back leaves
nothing behind, and acts once it commits.

`publication_due`: a managed Delta table (`table_id`) holds so many ratified commits that nobody
has published yet that the catalog should publish them itself. Sent after the ratifying
transaction commits.

`change_events_written`: a transaction that wrote change events (catalog.services.change_events)
committed; their delivery is due.
"""

from django.dispatch import Signal

securable_dropped = Signal()
publication_due = Signal()
change_events_written = Signal()
