"""The wire of multi-table Delta transactions (commits.delta_transactions), for both Delta APIs:
a client-chosen transaction id and a list of per-table requests, each exactly what that API
accepts for one table (a seed 000 commit request; a `/delta/v1` updateTable request with the
table's identifier). The list is read here only as a list (at least one, at most
MOST_TABLES_PER_TRANSACTION); each item is read by its API's own model, so a refusal names its
place (`commits[2].commit_info.version must be at least 1 (is 0).`)."""

from __future__ import annotations

from typing import Annotated

from pydantic import BeforeValidator, Field

from commits.delta_v1.update_wire import DeltaUpdateTableRequest
from commits.delta_wire import DeltaCommitRequest
from commits.engine import MOST_TABLES_PER_TRANSACTION
from ucweb.bodies import Body, Hyphenated, NonEmpty, refusal

TransactionId = Annotated[NonEmpty, Field(max_length=255, description=(
    "Chosen by the client, at most 255 characters: the same id sent again with the same body is "
    "answered as the first time, with nothing ratified again; with another body it is refused (409)."))]


def _bounded(name: str):
    def check(value):
        if not isinstance(value, list) or not value:
            raise refusal(f"{name} must be a non-empty array.")
        if len(value) > MOST_TABLES_PER_TRANSACTION:
            raise refusal(f"A transaction commits to at most {MOST_TABLES_PER_TRANSACTION} tables; "
                          f"this one names {len(value)}.")
        return value
    return check


# -- seed 000 (`/delta/preview/transactions/commit`) ---------------------------------------------------
class DeltaTransactionRequest(Body):
    transaction_id: TransactionId
    commits: Annotated[list, BeforeValidator(_bounded("commits"), json_schema_input_type=list[DeltaCommitRequest])] = (
        Field(description="One commit request per table, as POST /delta/preview/commits takes it; "
                          "each table at most once."))


class DeltaTransactionCommitted(Body):
    table_id: str
    latest_table_version: int


class DeltaTransactionResponse(Body):
    transaction_id: str
    commits: list[DeltaTransactionCommitted] = Field(description="Each table's latest version, in the "
                                                                 "order of the request.")


# -- managed tables spec 1.0 (`/delta/v1/transactions/commit`) -----------------------------------------
class DeltaTableIdentifier(Hyphenated):
    catalog: NonEmpty
    schema_name: NonEmpty = Field(alias="schema")
    name: NonEmpty

    @property
    def label(self) -> str:
        return f"{self.catalog}.{self.schema_name}.{self.name}"


class DeltaTableChange(DeltaUpdateTableRequest):
    """updateTable's body for the table `identifier` names."""

    identifier: DeltaTableIdentifier


class DeltaCommitTransactionRequest(Hyphenated):
    transaction_id: TransactionId
    table_changes: Annotated[list, BeforeValidator(_bounded("table-changes"),
                                                   json_schema_input_type=list[DeltaTableChange])] = Field(
        description="One updateTable request per table, with the table's identifier; each table at most once.")


class DeltaTableCommitted(Hyphenated):
    identifier: DeltaTableIdentifier
    table_uuid: str
    latest_table_version: int | None = Field(description="None for an external table.")


class DeltaCommitTransactionResponse(Hyphenated):
    transaction_id: str
    results: list[DeltaTableCommitted] = Field(description="Each table's latest version, in the order of the "
                                                           "request.")
