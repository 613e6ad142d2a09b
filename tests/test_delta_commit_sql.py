"""The hot path of Delta commits writes its SQL by hand (catalog.rows, commits.one_statement):
the rows it reads and the statement it writes are the ORM's, locking happens only where the
ORM's would, and each query converts values with its own connection's converters."""

import uuid
from unittest import mock

import pytest
from django.db import connection, transaction
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from catalog.models import Catalog, Column, Schema, Table
from commits.models import DeltaCommit
from tests.delta_commit_support import table  # noqa: F401 - the fixture

pytestmark = pytest.mark.django_db(transaction=True)


def _fields_of(row):
    return {field.attname: getattr(row, field.attname) for field in row._meta.concrete_fields}


def test_the_table_row_reads_as_the_orm_reads_it(delta, table, bootstrap):
    """catalog.rows reads tables and columns with SQL written once; the instances hold what the
    ORM's own queries give (conversions included), and a grantee's privileges come with the row."""
    from django.db.models import prefetch_related_objects

    from catalog import authz
    from catalog.models import Grant, Principal
    from catalog import rows
    from commits.delta_v1.tables import COMMIT_KEYS

    orm = Table.objects.select_related("schema__catalog").get(id=table[0])
    orm.comment, orm.properties, orm.uniform_iceberg = "c", {"k": "v"}, {"metadata_location": "s3://m"}
    orm.save()
    Column.objects.create(table=orm, name="b", type_text="string", type_json='{"type":"string"}', type_name="STRING",
                          position=11, partition_index=0)
    Column.objects.create(table=orm, name="a", type_text="bigint", type_json='{"type":"long"}', type_name="LONG",
                          position=10, nullable=False)
    admin = Principal.objects.get(name="admin")
    bob = Principal.objects.create(name="bob")
    Grant.objects.create(securable_type="table", securable_id=orm.id, securable_name=orm.full_name,
                         principal="bob", privilege="SELECT")
    for caller, where, params in [(admin, rows.BY_ID, [rows.table_id(orm.id)]),
                                  (bob, rows.by_name(2), ["unity", "nothing", "default", orm.name])]:
        with transaction.atomic():
            [read] = rows.tables(caller, where, params, for_update=True, pending=COMMIT_KEYS)
        assert _fields_of(read) == _fields_of(orm)
        assert _fields_of(read.schema) == _fields_of(orm.schema)
        assert _fields_of(read.schema.catalog) == _fields_of(orm.schema.catalog)
        assert read.schema._state.adding is False  # a rename of it moves its descendants (Schema.save)
        if connection.vendor == "postgresql":  # the pending commits are a column of PostgreSQL's SQL only
            assert (read.pending.text, read.pending.count) == ("[]", 0) and read.pending.whole(read)
        assert authz.access_to_read(caller, read).has("SELECT")
        rows.read_columns(read)
        prefetch_related_objects([orm], "columns")
        with CaptureQueriesContext(connection) as queries:
            kept = rows.columns_of(read)
            assert all(column.table is read for column in kept)
        assert len(queries) == 0  # kept with the row, each column's table the row itself
        assert [_fields_of(c) for c in kept] == [_fields_of(c) for c in orm.columns.all()]
        assert [c.name for c in kept][-2:] == ["a", "b"]
        assert read.columns.filter(position=10).count() == 1
    assert rows.tables(admin, rows.BY_ID, [rows.table_id(uuid.uuid4())]) == []


def test_the_table_row_is_locked_only_in_a_transaction_and_only_by_the_modules_conditions(delta, table, bootstrap):
    from catalog.models import Principal
    from catalog import rows

    admin = Principal.objects.get(name="admin")
    params = [rows.table_id(table[0])]
    if connection.features.has_select_for_update:  # as QuerySet.select_for_update in autocommit
        with pytest.raises(TransactionManagementError):
            rows.tables(admin, rows.BY_ID, params, for_update=True)
    assert len(rows.tables(admin, rows.BY_ID, params)) == 1
    for where in (rows.BY_ID.replace("%s", f"'{table[0]}'"), rows.BY_ID + " OR TRUE", rows.by_name(2) + " "):
        with pytest.raises(ValueError):
            rows.tables(admin, where, params)


def test_the_conversions_of_the_table_row_are_the_connections_of_each_query(delta, table, bootstrap):
    """The statement is cached for the process; the converters are asked of the connection that
    runs the queries (SQLite's are its methods; each thread has its own connection), once."""
    import threading

    from django.db import connections

    from catalog.models import Principal
    from catalog import rows

    admin = Principal.objects.get(name="admin")
    params = [rows.table_id(table[0])]
    converted = [model for model in (Table, Schema, Catalog, Column)
                 if any(connection.ops.get_db_converters(f.get_col(model._meta.db_table)) +
                        f.get_col(model._meta.db_table).get_db_converters(connection)
                        for f in model._meta.concrete_fields)]

    def read_with_recorded_converters() -> list:
        asked = []
        ops = connections["default"].ops  # this thread's connection's
        ask = ops.get_db_converters

        def recording(expression):
            asked.append(expression)
            return ask(expression)

        with mock.patch.object(ops, "get_db_converters", recording):
            [read] = rows.tables(admin, rows.BY_ID, params)
            rows.read_columns(read)
            [read] = rows.tables(admin, rows.BY_ID, params)
            rows.read_columns(read)
        return asked

    rows.read_columns(rows.tables(admin, rows.BY_ID, params)[0])  # this connection's are known now
    assert read_with_recorded_converters() == []
    other = []  # a thread of its own: its connection is asked, once for both reads
    thread = threading.Thread(target=lambda: (other.extend(read_with_recorded_converters()),
                                              connections.close_all()))
    thread.start()
    thread.join()
    assert {expression.target.model for expression in other} == set(converted)
    assert len(other) == len({id(expression) for expression in other})


def _plain(statement):
    """SQL and parameters, with JSON parameters as the values they wrap (adapters do not compare)."""
    sql, params = statement
    return sql, [getattr(value, "obj", value) for value in params]


def test_the_commit_statement_is_the_orms(table):
    """commits.one_statement writes each part's SQL once per process; it is the SQL, and the
    values are the parameters, that the ORM's insert and update compilers make for the same rows."""
    from django.db import connection
    from django.db.models import Q
    from django.db.models.sql import InsertQuery, UpdateQuery
    from django.utils import timezone

    from catalog.services import audit
    from commits import one_statement

    row = Table.objects.get(id=table[0])
    row.properties, row.comment = {"a": "b"}, "c"  # (None is a NULL parameter where the ORM writes NULL)
    row.uniform_iceberg = {"metadata_location": "s3://x"}
    commit = DeltaCommit(table=row, version=7, timestamp=1, file_name="f.json", file_size=2,
                         file_modification_timestamp=3, file_sha256="ab", ratified_by="me", txn_id=None)
    event = audit.event(principal="me", action="commitDelta", securable_type="table", securable_name="a.b.c",
                        securable_id=row.id, details={"version": 7})
    now = timezone.now()
    for new in (commit, event):
        meta = new._meta
        fields = [f for f in meta.local_concrete_fields if not f.generated and f is not meta.auto_field]
        query = InsertQuery(type(new))
        query.insert_values(fields, [new])
        with mock.patch("django.utils.timezone.now", return_value=now):  # the same auto_now_add
            ours = one_statement._insert(new)
            [(sql, params)] = query.get_compiler(connection=connection).as_sql()
        assert _plain(ours) == _plain((sql, params))
    names = ["latest_version", "updated_at", "updated_by", "properties", "uniform_iceberg", "comment"]
    query = UpdateQuery(Table)
    query.add_update_fields([(Table._meta.get_field(name), None, Table._meta.get_field(name).pre_save(row, False))
                             for name in sorted(names)])
    query.add_q(Q(pk=row.pk))
    sql, params = query.get_compiler(connection=connection).as_sql()
    assert _plain(one_statement._update(row, names)) == _plain((sql, params))
