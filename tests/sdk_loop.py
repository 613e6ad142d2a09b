"""The Unity Catalog SDK (`unitycatalog-client`) is an asyncio client. An application opens its
ApiClient once and keeps it, with its HTTP connections; a `KeptSDK` does the same for the tests,
on an event loop of its own (a daemon thread), so that synchronous test code can call it, and
calls from several threads at once run concurrently. A client opened per call would cost a new
connection each time, and the live server a new thread and a new database connection."""

from __future__ import annotations

import asyncio
import threading
import weakref

from unitycatalog.client import ApiClient, Configuration


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    asyncio.set_event_loop(loop)
    loop.run_forever()


def _shut_down(loop: asyncio.AbstractEventLoop, thread: threading.Thread, client: ApiClient) -> None:
    asyncio.run_coroutine_threadsafe(client.close(), loop).result()
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()


class KeptSDK:
    """One ApiClient for `host`, sending `token` unless a call sets its own header. `close()` (or
    the garbage collector) closes it."""

    def __init__(self, host: str, token: str | None = None, *, name: str = "sdk"):
        self._loop = asyncio.new_event_loop()
        thread = threading.Thread(target=_serve, args=(self._loop,), name=name, daemon=True)
        thread.start()
        self.client = self.run(self._open(host, token))
        self.close = weakref.finalize(self, _shut_down, self._loop, thread, self.client)

    @staticmethod
    async def _open(host: str, token: str | None) -> ApiClient:
        client = ApiClient(Configuration(host=host))
        if token is not None:
            client.set_default_header("Authorization", f"Bearer {token}")
        return client

    def run(self, coroutine):
        """Runs `coroutine` on the client's loop and returns its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()
