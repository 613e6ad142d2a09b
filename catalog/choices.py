"""Every enumeration of the catalog in one place.

Most of them state each member's name once and spell its value from it (`_choices`): as the name
itself ("MANAGED"), or as its protocol spells it: the securable type in lower case
("registered_model"), the privilege as SQL ("CREATE CATALOG"), the audit action in camel case
("createCatalog"). Their labels are Django's, the name title-cased, as a class body gives them."""

from collections.abc import Callable

from django.db import models


def _choices(name: str, members: str, spelling: Callable[[str], str] = str) -> type[models.TextChoices]:
    """The TextChoices `name` with the `members` (names separated by white space) in their order,
    each member's value `spelling(member)`."""
    return models.TextChoices(name, [(member, spelling(member)) for member in members.split()], module=__name__)


def _camel_case(member: str) -> str:
    first, *rest = member.lower().split("_")
    return first + "".join(word.capitalize() for word in rest)


SecurableType = _choices(
    "SecurableType",
    "METASTORE CATALOG SCHEMA TABLE FUNCTION VOLUME REGISTERED_MODEL EXTERNAL_LOCATION CREDENTIAL POLICY",
    str.lower,
)

# The privileges as SQL spells them ("CREATE CATALOG").
Privilege = _choices(
    "Privilege",
    "CREATE_CATALOG USE_CATALOG CREATE_SCHEMA USE_SCHEMA CREATE_TABLE SELECT MODIFY CREATE_FUNCTION EXECUTE "
    "CREATE_VOLUME READ_VOLUME CREATE_MODEL CREATE_EXTERNAL_LOCATION READ_FILES WRITE_FILES "
    "CREATE_EXTERNAL_TABLE CREATE_EXTERNAL_VOLUME CREATE_MANAGED_STORAGE CREATE_STORAGE_CREDENTIAL "
    # Unity Catalog's MANAGE: on a table, change its definition (catalog.authz, Action.ALTER).
    "MANAGE "
    # Polaris policies (see catalog.services.policies for how Polaris's POLICY_* privileges map).
    "CREATE_POLICY APPLY_POLICY",
    lambda member: member.replace("_", " "),
)


# Which privileges make sense on which securable. A privilege granted on a container is inherited
# by everything inside it (a SELECT on a catalog reads every table of every schema in it), so a
# catalog takes what a schema takes, and what concerns its schemas themselves.
_ON_A_SCHEMA = frozenset(
    {
        Privilege.USE_SCHEMA,
        Privilege.CREATE_TABLE,
        Privilege.SELECT,
        Privilege.MODIFY,
        Privilege.MANAGE,
        Privilege.CREATE_FUNCTION,
        Privilege.EXECUTE,
        Privilege.CREATE_VOLUME,
        Privilege.READ_VOLUME,
        Privilege.CREATE_MODEL,
        Privilege.CREATE_POLICY,
        Privilege.APPLY_POLICY,
    }
)
PRIVILEGES_BY_SECURABLE: dict[str, frozenset[str]] = {
    SecurableType.METASTORE: frozenset(
        {
            Privilege.CREATE_CATALOG,
            Privilege.CREATE_EXTERNAL_LOCATION,
            Privilege.CREATE_STORAGE_CREDENTIAL,
        }
    ),
    SecurableType.CATALOG: _ON_A_SCHEMA | {Privilege.USE_CATALOG, Privilege.CREATE_SCHEMA},
    SecurableType.SCHEMA: _ON_A_SCHEMA,
    SecurableType.TABLE: frozenset({Privilege.SELECT, Privilege.MODIFY, Privilege.MANAGE, Privilege.APPLY_POLICY}),
    SecurableType.FUNCTION: frozenset({Privilege.EXECUTE}),
    SecurableType.VOLUME: frozenset({Privilege.READ_VOLUME}),
    SecurableType.REGISTERED_MODEL: frozenset({Privilege.EXECUTE}),
    SecurableType.EXTERNAL_LOCATION: frozenset(
        {
            Privilege.READ_FILES,
            Privilege.WRITE_FILES,
            Privilege.CREATE_EXTERNAL_TABLE,
            Privilege.CREATE_EXTERNAL_VOLUME,
            Privilege.CREATE_MANAGED_STORAGE,
        }
    ),
    SecurableType.CREDENTIAL: frozenset({Privilege.CREATE_EXTERNAL_LOCATION}),
    SecurableType.POLICY: frozenset({Privilege.APPLY_POLICY}),
}


TableType = _choices("TableType", "MANAGED EXTERNAL STREAMING_TABLE MATERIALIZED_VIEW METRIC_VIEW VIEW")
DataSourceFormat = _choices("DataSourceFormat", "DELTA ICEBERG CSV JSON AVRO PARQUET ORC TEXT")
ColumnTypeName = _choices(
    "ColumnTypeName",
    "BOOLEAN BYTE SHORT INT LONG FLOAT DOUBLE DATE TIMESTAMP TIMESTAMP_NTZ STRING BINARY DECIMAL INTERVAL "
    "ARRAY STRUCT MAP VARIANT CHAR NULL USER_DEFINED_TYPE TABLE_TYPE",
)
PrincipalKind = _choices("PrincipalKind", "USER SERVICE_PRINCIPAL")
# What a group stands for. Grants, membership and nesting work the same for every kind: GROUP, a
# group of the organization (Unity Catalog, SCIM); PRINCIPAL_ROLE (Polaris), granted to principals,
# holds catalog roles; CATALOG_ROLE (Polaris), scoped to one catalog, holds privileges in it.
GroupKind = _choices("GroupKind", "GROUP PRINCIPAL_ROLE CATALOG_ROLE")
AuditOutcome = _choices("AuditOutcome", "SUCCESS DENIED FAILED")

# -- volumes, functions, models, credentials, external locations, temporary credentials ---------
VolumeType = _choices("VolumeType", "MANAGED EXTERNAL")
RoutineBody = _choices("RoutineBody", "SQL EXTERNAL")
ParameterStyle = _choices("ParameterStyle", "S")
SqlDataAccess = _choices("SqlDataAccess", "CONTAINS_SQL READS_SQL_DATA NO_SQL")
FunctionSecurityType = _choices("FunctionSecurityType", "DEFINER")
FunctionParameterType = _choices("FunctionParameterType", "PARAM COLUMN")
FunctionParameterMode = _choices("FunctionParameterMode", "IN")
ModelVersionStatus = _choices(
    "ModelVersionStatus", "MODEL_VERSION_STATUS_UNKNOWN PENDING_REGISTRATION FAILED_REGISTRATION READY")
CredentialPurpose = _choices("CredentialPurpose", "STORAGE SERVICE")
TableOperation = _choices("TableOperation", "UNKNOWN_TABLE_OPERATION READ READ_WRITE")
VolumeOperation = _choices("VolumeOperation", "UNKNOWN_VOLUME_OPERATION READ_VOLUME WRITE_VOLUME")
PathOperation = _choices("PathOperation", "UNKNOWN_PATH_OPERATION PATH_READ PATH_READ_WRITE PATH_CREATE_TABLE")
ModelVersionOperation = _choices(
    "ModelVersionOperation", "UNKNOWN_MODEL_VERSION_OPERATION READ_MODEL_VERSION READ_WRITE_MODEL_VERSION")


# -- Polaris policies -----------------------------------------------------------------------------
class PolicyType(models.TextChoices):
    """The system policy types of Apache Polaris; all of them are inheritable."""

    DATA_COMPACTION = "system.data-compaction"
    METADATA_COMPACTION = "system.metadata-compaction"
    SNAPSHOT_EXPIRY = "system.snapshot-expiry"
    ORPHAN_FILE_REMOVAL = "system.orphan-file-removal"


class PolicyTargetType(models.TextChoices):
    CATALOG = "catalog"
    NAMESPACE = "namespace"
    TABLE_LIKE = "table-like"


# The audit trail's one vocabulary, in camel case ("createCatalog"): a change, a read of data
# credentials and a refusal of either are recorded under the same name (catalog.services.audit
# refuses any other).
AuditAction = _choices(
    "AuditAction",
    "CREATE_METASTORE "
    "CREATE_CATALOG UPDATE_CATALOG DELETE_CATALOG "
    "CREATE_SCHEMA UPDATE_SCHEMA UPDATE_NAMESPACE_PROPERTIES DELETE_SCHEMA "
    "CREATE_TABLE CREATE_STAGING_TABLE UPDATE_TABLE RENAME_TABLE DELETE_TABLE UNDROP_TABLE PURGE_DROPPED_TABLE "
    "COMMIT_DELTA UPDATE_DELTA_TABLE COMMIT_DELTA_TRANSACTION REPORT_METRICS "
    "CREATE_ICEBERG_TABLE REGISTER_ICEBERG_TABLE COMMIT_ICEBERG_TABLE RENAME_ICEBERG_TABLE DROP_ICEBERG_TABLE "
    "CREATE_ICEBERG_VIEW REGISTER_ICEBERG_VIEW REPLACE_ICEBERG_VIEW RENAME_ICEBERG_VIEW DROP_ICEBERG_VIEW "
    "NOTIFY_TABLE CREATE_TABLE_BY_NOTIFICATION UPDATE_TABLE_BY_NOTIFICATION DROP_TABLE_BY_NOTIFICATION "
    "CREATE_GENERIC_TABLE DROP_GENERIC_TABLE "
    "CREATE_POLICY UPDATE_POLICY DROP_POLICY ATTACH_POLICY DETACH_POLICY "
    "CREATE_VOLUME UPDATE_VOLUME DELETE_VOLUME UNDROP_VOLUME PURGE_DROPPED_VOLUME "
    "CREATE_FUNCTION DELETE_FUNCTION "
    "CREATE_REGISTERED_MODEL UPDATE_REGISTERED_MODEL DELETE_REGISTERED_MODEL "
    "CREATE_MODEL_VERSION UPDATE_MODEL_VERSION FINALIZE_MODEL_VERSION DELETE_MODEL_VERSION "
    "CREATE_CREDENTIAL UPDATE_CREDENTIAL DELETE_CREDENTIAL "
    "CREATE_EXTERNAL_LOCATION UPDATE_EXTERNAL_LOCATION DELETE_EXTERNAL_LOCATION "
    "UPDATE_PERMISSIONS "
    # reads of data: credentials vended, requests signed
    "GENERATE_TEMPORARY_TABLE_CREDENTIALS GENERATE_TEMPORARY_VOLUME_CREDENTIALS "
    "GENERATE_TEMPORARY_PATH_CREDENTIALS GENERATE_TEMPORARY_MODEL_VERSION_CREDENTIALS "
    "VEND_ICEBERG_CREDENTIALS SIGN_ICEBERG_REQUEST "
    # server-side scan planning: the files of a scan (and keys for them) read, a plan dropped
    "PLAN_ICEBERG_SCAN FETCH_ICEBERG_SCAN_PLAN FETCH_ICEBERG_SCAN_TASKS CANCEL_ICEBERG_SCAN_PLAN "
    # rows of a table shown in the console
    "PREVIEW_TABLE "
    # groups and their members
    "CREATE_GROUP UPDATE_GROUP DELETE_GROUP "
    # principals and their keys
    "CREATE_PRINCIPAL DELETE_PRINCIPAL UPDATE_PRINCIPAL SET_METASTORE_ADMIN ISSUE_TOKEN REVOKE_TOKEN "
    "CREATE_CLIENT_SECRET ROTATE_CLIENT_SECRET "
    # an OpenID provider's users: their groups synced from a token, an IdP token exchanged for ucweb's
    "SYNC_IDP_GROUPS EXCHANGE_TOKEN "
    # maintenance: asked for by a principal, then run by the catalog
    "REQUEST_MAINTENANCE MAINTENANCE_OPTIMIZE MAINTENANCE_CHECKPOINT MAINTENANCE_VACUUM "
    "MAINTENANCE_EXPIRE_SNAPSHOTS MAINTENANCE_REMOVE_ORPHANS MAINTENANCE_REWRITE_MANIFESTS",
    _camel_case,
)
