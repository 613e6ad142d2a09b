"""updateTable's request in the Delta REST API (managed tables spec 1.0): its requirements and its
actions, each a tagged object, read into what commits.delta_v1.update takes. The members it shares
with createTable (protocol, domain metadata, columns) are commits.delta_v1.wire's."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, field_validator, model_validator

from commits.delta_v1.wire import (
    BadRequest, DeltaDomainMetadata, DeltaProtocol, Json, StringMap, Strings, StructType, object_of,
)
from commits.delta_wire import DeltaCommit
from commits.formats import delta_protocol as dp
from ucweb.bodies import (
    PATH, Hyphenated, HyphenatedAbsentAsNull, Int64, NonEmpty, hyphenated, placed_at_root, read, refusal, refusing,
    worded,
)
from ucweb.ids import parse_uuid


# updateTable's requirements, each a tagged object.
class DeltaAssertTableUuid(HyphenatedAbsentAsNull):
    type: Literal["assert-table-uuid"]
    uuid: worded(NonEmpty, f"{PATH} is required.")


class DeltaAssertEtag(HyphenatedAbsentAsNull):
    type: Literal["assert-etag"]
    etag: worded(NonEmpty, f"{PATH} is required.")


REQUIREMENTS = {"assert-table-uuid": DeltaAssertTableUuid, "assert-etag": DeltaAssertEtag}


def _by_kind(requirements: list) -> dict[str, str]:
    """The requirements by kind: the asserted table id (canonical) and, if sent, the etag."""
    asserted = {}
    for index, item in enumerate(requirements):
        kind = item.get("type") if isinstance(item, dict) else None
        if not isinstance(kind, str) or kind not in REQUIREMENTS:
            raise refusal(f"requirements[{index}].type must be assert-table-uuid or assert-etag.", BadRequest)
        if kind in asserted:
            raise refusal(f"At most one {kind} requirement per request.")
        model = refusing(read, REQUIREMENTS[kind], item, f"requirements[{index}]")
        asserted[kind] = model.uuid if kind == "assert-table-uuid" else model.etag
    if "assert-table-uuid" not in asserted:
        raise refusal("Every update needs an assert-table-uuid requirement.")
    asserted["assert-table-uuid"] = str(refusing(parse_uuid, asserted["assert-table-uuid"],
                                                 field="assert-table-uuid.uuid"))
    return asserted


# updateTable's actions, each a tagged object.
class DeltaSetProperties(HyphenatedAbsentAsNull):
    action: Literal["set-properties"]
    updates: StringMap


class DeltaRemoveProperties(HyphenatedAbsentAsNull):
    action: Literal["remove-properties"]
    removals: Strings


class DeltaSetProtocol(HyphenatedAbsentAsNull):
    action: Literal["set-protocol"]
    protocol: object_of(DeltaProtocol)


class DeltaSetPartitionColumns(HyphenatedAbsentAsNull):
    action: Literal["set-partition-columns"]
    partition_columns: Strings


class DeltaSetColumns(Hyphenated):
    action: Literal["set-columns"]
    columns: worded(StructType, f"{PATH} is required.", null_only=True) = Field(
        description="Read with the table's partition columns unless the request sets them.")


class DeltaSetTableComment(HyphenatedAbsentAsNull):
    action: Literal["set-table-comment"]
    comment: worded(str, f"{PATH} must be a string.")


class DeltaSetDomainMetadata(HyphenatedAbsentAsNull):
    action: Literal["set-domain-metadata"]
    updates: object_of(DeltaDomainMetadata)


class DeltaRemoveDomainMetadata(HyphenatedAbsentAsNull):
    action: Literal["remove-domain-metadata"]
    domains: Strings


class DeltaAddCommit(HyphenatedAbsentAsNull):
    action: Literal["add-commit"]
    commit: object_of(DeltaCommit)
    uniform: Json = Field(None, description="Required when the table's properties enable UniForm; "
                                            "its metadata-location lies inside the table's location.")


class DeltaSetLatestBackfilledVersion(Hyphenated):
    action: Literal["set-latest-backfilled-version"]
    latest_published_version: Int64(0)


class DeltaUpdateMetadataSnapshotVersion(Hyphenated):
    """For external tables."""

    action: Literal["update-metadata-snapshot-version"]
    last_commit_version: Int64(0)
    last_commit_timestamp_ms: Int64(0)


METADATA_ACTIONS = ("set-properties", "remove-properties", "set-protocol", "set-columns", "set-partition-columns",
                    "set-table-comment", "set-domain-metadata", "remove-domain-metadata")


class DeltaUpdates(Hyphenated):
    """The actions of one updateTable request by name, checked in this order."""

    set_properties: DeltaSetProperties | None = None
    remove_properties: DeltaRemoveProperties | None = Field(None, validate_default=True)
    set_protocol: DeltaSetProtocol | None = None
    set_partition_columns: DeltaSetPartitionColumns | None = None
    set_columns: DeltaSetColumns | None = None
    set_table_comment: DeltaSetTableComment | None = None
    set_domain_metadata: DeltaSetDomainMetadata | None = None
    remove_domain_metadata: DeltaRemoveDomainMetadata | None = None
    add_commit: DeltaAddCommit | None = None
    set_latest_backfilled_version: DeltaSetLatestBackfilledVersion | None = None
    # Its members are named from the body's root, as they always were.
    update_metadata_snapshot_version: placed_at_root(DeltaUpdateMetadataSnapshotVersion | None) = None

    @field_validator("remove_properties")
    @classmethod
    def _properties(cls, removing, info):
        setting = info.data.get("set_properties")
        keys = (setting.updates if setting else {}, removing.removals if removing else [])
        for touched in keys:
            synthetic = sorted(key for key in touched if dp.is_synthetic(key))
            if synthetic:
                raise refusal(f"Server-derived properties cannot be set or removed: {', '.join(synthetic)}.")
        if all(keys) and set(keys[0]) & set(keys[1]):
            raise refusal("set-properties and remove-properties touch the same key.")
        return removing

    @field_validator("remove_domain_metadata")
    @classmethod
    def _domains(cls, removing, info):
        if removing is None or not removing.domains:
            return removing
        if any(domain not in dp.DOMAINS for domain in removing.domains):
            raise refusal(f"remove-domain-metadata: known domains are {', '.join(sorted(dp.DOMAINS))}.")
        setting = info.data.get("set_domain_metadata")
        if setting and set(setting.updates.stored()) & set(removing.domains):
            raise refusal("set-domain-metadata and remove-domain-metadata touch the same domain.")
        return removing

    @property
    def names(self) -> list[str]:
        """The actions sent, by name."""
        return [hyphenated(name) for name in self.model_fields_set]

    @property
    def commit(self) -> DeltaCommit | None:
        return self.add_commit.commit if self.add_commit else None

    @property
    def backfilled(self) -> int | None:
        return self.set_latest_backfilled_version.latest_published_version \
            if self.set_latest_backfilled_version else None

    @property
    def snapshot(self) -> tuple[int, int] | None:
        """The external table's version and its timestamp, as update-metadata-snapshot-version sets them."""
        item = self.update_metadata_snapshot_version
        return (item.last_commit_version, item.last_commit_timestamp_ms) if item else None

    @property
    def protocol(self) -> dict | None:
        """The protocol set, as delta_protocol takes it."""
        return self.set_protocol.protocol.model_dump(by_alias=True) if self.set_protocol else None

    @property
    def changes_metadata(self) -> bool:
        return any(name in METADATA_ACTIONS for name in self.names)


ACTIONS = tuple(hyphenated(name) for name in DeltaUpdates.model_fields)
# Changes with a Delta log representation travel with the add-commit that writes them.
LOG_REPRESENTED = ("set-protocol", "set-columns", "set-partition-columns", "set-domain-metadata",
                   "remove-domain-metadata")


def _by_action(updates: list) -> DeltaUpdates:
    actions = {}
    for index, item in enumerate(updates):
        action = item.get("action") if isinstance(item, dict) else None
        if action not in ACTIONS:
            raise refusal(f"updates[{index}].action {action!r} is not an action of this API.", BadRequest)
        if action in actions:
            raise refusal(f"At most one {action} action per request.")
        actions[action] = item
    return refusing(read, DeltaUpdates, actions)


Action = Annotated[
    DeltaSetProperties | DeltaRemoveProperties | DeltaSetProtocol | DeltaSetPartitionColumns | DeltaSetColumns
    | DeltaSetTableComment | DeltaSetDomainMetadata | DeltaRemoveDomainMetadata | DeltaAddCommit
    | DeltaSetLatestBackfilledVersion | DeltaUpdateMetadataSnapshotVersion,
    Field(discriminator="action")]


class DeltaUpdateTableRequest(Hyphenated):
    requirements: Annotated[dict[str, str], BeforeValidator(
        _by_kind, json_schema_input_type=list[Annotated[DeltaAssertTableUuid | DeltaAssertEtag,
                                                        Field(discriminator="type")]])] = Field(
        description="assert-table-uuid (required), assert-etag")
    updates: Annotated[DeltaUpdates, BeforeValidator(_by_action, json_schema_input_type=list[Action])]

    @model_validator(mode="before")
    @classmethod
    def _arrays(cls, data):
        if not isinstance(data.get("requirements"), list) or not isinstance(data.get("updates"), list):
            raise refusal("requirements and updates must be arrays.", BadRequest)
        if not data["updates"]:
            raise refusal("updates must contain at least one action.")
        return data
