"""The number of SQL queries of each hot path, pinned in tests/query_counts.json so that an N+1 or
an extra round trip fails a test. After a deliberate change, run the tests with
UPDATE_QUERY_COUNTS=1: the file is rewritten with what was measured instead of failing (keys keep
their order, new ones are added at the end, one a line)."""

from __future__ import annotations

import json
import os
from pathlib import Path

PINS_FILE = Path(__file__).parent / "query_counts.json"


def updating() -> bool:
    return os.environ.get("UPDATE_QUERY_COUNTS", "") not in ("", "0")


def pins() -> dict[str, int]:
    return json.loads(PINS_FILE.read_text())


def assert_query_count(name: str, measured: int) -> None:
    if updating():
        current = pins()
        if current.get(name) != measured:
            current[name] = measured
            PINS_FILE.write_text(json.dumps(current, indent=2) + "\n")
        return
    pinned = pins().get(name)
    assert pinned is not None, f"no pin for {name!r} ({measured} queries); run with UPDATE_QUERY_COUNTS=1"
    assert measured == pinned, (
        f"{name}: {measured} queries, pinned {pinned}; if the change is deliberate, run with UPDATE_QUERY_COUNTS=1")
