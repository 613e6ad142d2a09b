"""The embedded broker (ucweb.broker): a consumer never takes a message that is still being
written. With kombu's own filesystem transport the worker took an empty file under load, failed
to decode it and exited, and the message was lost (seen under the commit storms of
tests/test_embedded_sqlite.py)."""

from __future__ import annotations

import os
import threading
from queue import Empty

import pytest
from kombu import Connection

from ucweb import broker


@pytest.fixture
def channel(tmp_path):
    folders = {"data_folder_in": str(tmp_path), "data_folder_out": str(tmp_path),
               "processed_folder": str(tmp_path / "processed"), "control_folder": str(tmp_path / "control")}
    with Connection("filesystem://localhost//", transport="ucweb.broker:Transport",
                    transport_options=folders) as connection:
        yield connection.default_channel


def test_settings_choose_this_transport_for_the_folder_broker(settings):
    if not settings.CELERY_BROKER_URL.startswith("filesystem://"):
        pytest.skip("the broker is not the embedded one")
    assert settings.CELERY_BROKER_TRANSPORT == "ucweb.broker:Transport"


def test_a_message_is_out_of_sight_until_it_is_whole(channel, monkeypatch):
    message = {"body": "x" * 200_000, "headers": {"task": "maintenance.publish_verify_table"}}
    replace = os.replace
    written = []

    def checked_replace(source, target):
        """The moment before the message gets its name: it is all there, and nobody sees it."""
        with pytest.raises(Empty):
            channel._get("celery")
        with open(source, "rb") as handle:
            written.append(len(handle.read()))
        replace(source, target)

    monkeypatch.setattr(broker.os, "replace", checked_replace)
    channel._put("celery", message)
    assert written and written[0] > 200_000
    assert channel._get("celery") == message


def test_a_write_cut_short_leaves_nothing_to_take(channel, tmp_path):
    (tmp_path / "1_abc.celery.msg.part").write_bytes(b'{"body": ')
    with pytest.raises(Empty):
        channel._get("celery")
    assert channel._size("celery") == 0


def test_messages_sent_while_the_consumer_takes_them_arrive_whole(channel):
    senders, each = 4, 50

    def send(sender):
        for index in range(each):
            channel._put("celery", {"sender": sender, "index": index})

    threads = [threading.Thread(target=send, args=(sender,)) for sender in range(senders)]
    for thread in threads:
        thread.start()
    received = []
    while len(received) < senders * each:
        try:
            received.append(channel._get("celery"))
        except Empty:
            assert any(thread.is_alive() for thread in threads) or channel._size("celery"), received[-3:]
    for thread in threads:
        thread.join()
    assert sorted((m["sender"], m["index"]) for m in received) == [
        (sender, index) for sender in range(senders) for index in range(each)]
