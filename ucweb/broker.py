"""The embedded broker (a folder under var/, see CELERY_BROKER_URL in ucweb.settings): kombu's
filesystem transport, with messages that appear whole.

kombu writes a message under its final name (open, lock, write), while a consumer takes one by
renaming it away and reading it, without the lock. Under a storm of commits the worker took a
message that was still empty, failed to decode it ("Unrecoverable error: JSONDecodeError") and
exited: the message was lost, and until the worker was started again readiness answered 503 and
nothing was published or purged. Here a message is written under a name that no consumer takes,
then renamed into place, which within one folder is atomic."""

from __future__ import annotations

import os
import uuid
from time import monotonic

from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import str_to_bytes
from kombu.utils.json import dumps


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        # kombu's own naming: consumers take messages in the order of their names.
        name = os.path.join(self.data_folder_out, f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg")
        # Consumers, purges and sizes only count names that end in "<queue>.msg".
        partial = f"{name}.part"
        try:
            with open(partial, "wb") as handle:
                handle.write(str_to_bytes(dumps(payload)))
            os.replace(partial, name)
        except OSError as exc:
            try:
                os.unlink(partial)
            except OSError:
                pass
            raise ChannelError(f"Cannot add file {name!r} to directory") from exc


class Transport(filesystem.Transport):
    Channel = Channel
