"""Pure pieces of the maintenance executors: no database, no storage."""

import pytest

from maintenance import delta_vacuum
from commits.delta_state import DeltaState
from maintenance.policy import parse_interval_hours


@pytest.mark.parametrize("encoded, relative", [
    # The examples of the Delta protocol (deletion vector storage type "u").
    ("ab^-aqEH.-t@S}K{vb[*k^", "ab/deletion_vector_d2c639aa-8816-431a-aaf6-d3fe2512ff61.bin"),
    ("vBn[lx{q8@P<9BNH/isA", "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"),
])
def test_deletion_vector_files_are_found_from_their_descriptor(encoded, relative):
    state = DeltaState(location="s3://bucket/tables/t1")
    found = delta_vacuum._deletion_vector_file(state, {"storageType": "u", "pathOrInlineDv": encoded})
    assert found == f"s3://bucket/tables/t1/{relative}"


def test_paths_outside_the_table_resolve_to_nothing():
    state = DeltaState(location="s3://bucket/tables/t1")
    assert state.resolve("part-1.parquet") == "s3://bucket/tables/t1/part-1.parquet"
    assert state.resolve("city%3DLyon/part-1.parquet") == "s3://bucket/tables/t1/city=Lyon/part-1.parquet"
    assert state.resolve("s3://bucket/tables/t1/x.parquet") == "s3://bucket/tables/t1/x.parquet"
    for hostile in ("s3://bucket/tables/t2/x.parquet", "s3://bucket/tables/t1-other/x.parquet",
                    "../t2/x.parquet", "file:///etc/passwd", "s3://other/tables/t1/x.parquet"):
        assert state.resolve(hostile) is None, hostile
    assert delta_vacuum._deletion_vector_file(
        state, {"storageType": "p", "pathOrInlineDv": "s3://bucket/tables/t2/dv.bin"}) is None


@pytest.mark.parametrize("text, hours", [
    ("interval 7 days", 168), ("interval 1 weeks", 168), ("168 hours", 168), ("interval 30 minutes", 0.5),
    ("INTERVAL 2 DAYS", 48), ("nonsense", None), ("", None), ("interval -1 days", None)])
def test_delta_intervals(text, hours):
    assert parse_interval_hours(text) == hours


def test_hidden_files_are_not_vacuumed():
    assert delta_vacuum._hidden("_delta_log/00000000000000000001.json")
    assert delta_vacuum._hidden("_change_data/cdc-1.parquet")
    assert delta_vacuum._hidden(".part-1.parquet.crc")
    assert not delta_vacuum._hidden("part-1.parquet")
    assert not delta_vacuum._hidden("city=_x/part-1.parquet")
