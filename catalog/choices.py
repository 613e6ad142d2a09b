"""Every enumeration of the catalog in one place."""

from django.db import models


class SecurableType(models.TextChoices):
    METASTORE = "metastore"
    CATALOG = "catalog"
    SCHEMA = "schema"
    TABLE = "table"
    FUNCTION = "function"
    VOLUME = "volume"
    REGISTERED_MODEL = "registered_model"
    EXTERNAL_LOCATION = "external_location"
    CREDENTIAL = "credential"
    POLICY = "policy"


class Privilege(models.TextChoices):
    CREATE_CATALOG = "CREATE CATALOG"
    USE_CATALOG = "USE CATALOG"
    CREATE_SCHEMA = "CREATE SCHEMA"
    USE_SCHEMA = "USE SCHEMA"
    CREATE_TABLE = "CREATE TABLE"
    SELECT = "SELECT"
    MODIFY = "MODIFY"
    CREATE_FUNCTION = "CREATE FUNCTION"
    EXECUTE = "EXECUTE"
    CREATE_VOLUME = "CREATE VOLUME"
    READ_VOLUME = "READ VOLUME"
    CREATE_MODEL = "CREATE MODEL"
    CREATE_EXTERNAL_LOCATION = "CREATE EXTERNAL LOCATION"
    READ_FILES = "READ FILES"
    WRITE_FILES = "WRITE FILES"
    CREATE_EXTERNAL_TABLE = "CREATE EXTERNAL TABLE"
    CREATE_EXTERNAL_VOLUME = "CREATE EXTERNAL VOLUME"
    CREATE_MANAGED_STORAGE = "CREATE MANAGED STORAGE"
    CREATE_STORAGE_CREDENTIAL = "CREATE STORAGE CREDENTIAL"
    # Polaris policies (see catalog.services.policies for how Polaris's POLICY_* privileges map).
    CREATE_POLICY = "CREATE POLICY"
    APPLY_POLICY = "APPLY POLICY"


# Which privileges make sense on which securable. A privilege granted on a container is inherited
# by everything inside it (a SELECT on a catalog reads every table of every schema in it).
PRIVILEGES_BY_SECURABLE: dict[str, frozenset[str]] = {
    SecurableType.METASTORE: frozenset(
        {
            Privilege.CREATE_CATALOG,
            Privilege.CREATE_EXTERNAL_LOCATION,
            Privilege.CREATE_STORAGE_CREDENTIAL,
        }
    ),
    SecurableType.CATALOG: frozenset(
        {
            Privilege.USE_CATALOG,
            Privilege.CREATE_SCHEMA,
            Privilege.USE_SCHEMA,
            Privilege.CREATE_TABLE,
            Privilege.SELECT,
            Privilege.MODIFY,
            Privilege.CREATE_FUNCTION,
            Privilege.EXECUTE,
            Privilege.CREATE_VOLUME,
            Privilege.READ_VOLUME,
            Privilege.CREATE_MODEL,
            Privilege.CREATE_POLICY,
            Privilege.APPLY_POLICY,
        }
    ),
    SecurableType.SCHEMA: frozenset(
        {
            Privilege.USE_SCHEMA,
            Privilege.CREATE_TABLE,
            Privilege.SELECT,
            Privilege.MODIFY,
            Privilege.CREATE_FUNCTION,
            Privilege.EXECUTE,
            Privilege.CREATE_VOLUME,
            Privilege.READ_VOLUME,
            Privilege.CREATE_MODEL,
            Privilege.CREATE_POLICY,
            Privilege.APPLY_POLICY,
        }
    ),
    SecurableType.TABLE: frozenset({Privilege.SELECT, Privilege.MODIFY, Privilege.APPLY_POLICY}),
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


class TableType(models.TextChoices):
    MANAGED = "MANAGED"
    EXTERNAL = "EXTERNAL"
    STREAMING_TABLE = "STREAMING_TABLE"
    MATERIALIZED_VIEW = "MATERIALIZED_VIEW"
    METRIC_VIEW = "METRIC_VIEW"
    VIEW = "VIEW"


class DataSourceFormat(models.TextChoices):
    DELTA = "DELTA"
    ICEBERG = "ICEBERG"
    CSV = "CSV"
    JSON = "JSON"
    AVRO = "AVRO"
    PARQUET = "PARQUET"
    ORC = "ORC"
    TEXT = "TEXT"


class ColumnTypeName(models.TextChoices):
    BOOLEAN = "BOOLEAN"
    BYTE = "BYTE"
    SHORT = "SHORT"
    INT = "INT"
    LONG = "LONG"
    FLOAT = "FLOAT"
    DOUBLE = "DOUBLE"
    DATE = "DATE"
    TIMESTAMP = "TIMESTAMP"
    TIMESTAMP_NTZ = "TIMESTAMP_NTZ"
    STRING = "STRING"
    BINARY = "BINARY"
    DECIMAL = "DECIMAL"
    INTERVAL = "INTERVAL"
    ARRAY = "ARRAY"
    STRUCT = "STRUCT"
    MAP = "MAP"
    VARIANT = "VARIANT"
    CHAR = "CHAR"
    NULL = "NULL"
    USER_DEFINED_TYPE = "USER_DEFINED_TYPE"
    TABLE_TYPE = "TABLE_TYPE"


class PrincipalKind(models.TextChoices):
    USER = "USER"
    SERVICE_PRINCIPAL = "SERVICE_PRINCIPAL"


class GroupKind(models.TextChoices):
    """What a group stands for. Grants, membership and nesting work the same for every kind."""

    GROUP = "GROUP"                    # a group of the organization (Unity Catalog, SCIM)
    PRINCIPAL_ROLE = "PRINCIPAL_ROLE"  # Polaris: granted to principals, holds catalog roles
    CATALOG_ROLE = "CATALOG_ROLE"      # Polaris: scoped to one catalog, holds privileges in it


class AuditOutcome(models.TextChoices):
    SUCCESS = "SUCCESS"
    DENIED = "DENIED"
    FAILED = "FAILED"


# -- volumes, functions, models, credentials, external locations, temporary credentials ---------
class VolumeType(models.TextChoices):
    MANAGED = "MANAGED"
    EXTERNAL = "EXTERNAL"


class RoutineBody(models.TextChoices):
    SQL = "SQL"
    EXTERNAL = "EXTERNAL"


class ParameterStyle(models.TextChoices):
    S = "S"


class SqlDataAccess(models.TextChoices):
    CONTAINS_SQL = "CONTAINS_SQL"
    READS_SQL_DATA = "READS_SQL_DATA"
    NO_SQL = "NO_SQL"


class FunctionSecurityType(models.TextChoices):
    DEFINER = "DEFINER"


class FunctionParameterType(models.TextChoices):
    PARAM = "PARAM"
    COLUMN = "COLUMN"


class FunctionParameterMode(models.TextChoices):
    IN = "IN"


class ModelVersionStatus(models.TextChoices):
    MODEL_VERSION_STATUS_UNKNOWN = "MODEL_VERSION_STATUS_UNKNOWN"
    PENDING_REGISTRATION = "PENDING_REGISTRATION"
    FAILED_REGISTRATION = "FAILED_REGISTRATION"
    READY = "READY"


class CredentialPurpose(models.TextChoices):
    STORAGE = "STORAGE"
    SERVICE = "SERVICE"


class TableOperation(models.TextChoices):
    UNKNOWN_TABLE_OPERATION = "UNKNOWN_TABLE_OPERATION"
    READ = "READ"
    READ_WRITE = "READ_WRITE"


class VolumeOperation(models.TextChoices):
    UNKNOWN_VOLUME_OPERATION = "UNKNOWN_VOLUME_OPERATION"
    READ_VOLUME = "READ_VOLUME"
    WRITE_VOLUME = "WRITE_VOLUME"


class PathOperation(models.TextChoices):
    UNKNOWN_PATH_OPERATION = "UNKNOWN_PATH_OPERATION"
    PATH_READ = "PATH_READ"
    PATH_READ_WRITE = "PATH_READ_WRITE"
    PATH_CREATE_TABLE = "PATH_CREATE_TABLE"


class ModelVersionOperation(models.TextChoices):
    UNKNOWN_MODEL_VERSION_OPERATION = "UNKNOWN_MODEL_VERSION_OPERATION"
    READ_MODEL_VERSION = "READ_MODEL_VERSION"
    READ_WRITE_MODEL_VERSION = "READ_WRITE_MODEL_VERSION"


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


class AuditAction(models.TextChoices):
    """The audit trail's one vocabulary: a change, a read of data credentials and a refusal of
    either are recorded under the same name (catalog.services.audit refuses any other)."""

    CREATE_METASTORE = "createMetastore"
    CREATE_CATALOG = "createCatalog"
    UPDATE_CATALOG = "updateCatalog"
    DELETE_CATALOG = "deleteCatalog"
    CREATE_SCHEMA = "createSchema"
    UPDATE_SCHEMA = "updateSchema"
    UPDATE_NAMESPACE_PROPERTIES = "updateNamespaceProperties"
    DELETE_SCHEMA = "deleteSchema"
    CREATE_TABLE = "createTable"
    CREATE_STAGING_TABLE = "createStagingTable"
    UPDATE_TABLE = "updateTable"
    RENAME_TABLE = "renameTable"
    DELETE_TABLE = "deleteTable"
    UNDROP_TABLE = "undropTable"
    PURGE_DROPPED_TABLE = "purgeDroppedTable"
    COMMIT_DELTA = "commitDelta"
    UPDATE_DELTA_TABLE = "updateDeltaTable"
    REPORT_METRICS = "reportMetrics"
    CREATE_ICEBERG_TABLE = "createIcebergTable"
    REGISTER_ICEBERG_TABLE = "registerIcebergTable"
    COMMIT_ICEBERG_TABLE = "commitIcebergTable"
    RENAME_ICEBERG_TABLE = "renameIcebergTable"
    DROP_ICEBERG_TABLE = "dropIcebergTable"
    CREATE_ICEBERG_VIEW = "createIcebergView"
    REGISTER_ICEBERG_VIEW = "registerIcebergView"
    REPLACE_ICEBERG_VIEW = "replaceIcebergView"
    RENAME_ICEBERG_VIEW = "renameIcebergView"
    DROP_ICEBERG_VIEW = "dropIcebergView"
    NOTIFY_TABLE = "notifyTable"
    CREATE_TABLE_BY_NOTIFICATION = "createTableByNotification"
    UPDATE_TABLE_BY_NOTIFICATION = "updateTableByNotification"
    DROP_TABLE_BY_NOTIFICATION = "dropTableByNotification"
    CREATE_GENERIC_TABLE = "createGenericTable"
    DROP_GENERIC_TABLE = "dropGenericTable"
    CREATE_POLICY = "createPolicy"
    UPDATE_POLICY = "updatePolicy"
    DROP_POLICY = "dropPolicy"
    ATTACH_POLICY = "attachPolicy"
    DETACH_POLICY = "detachPolicy"
    CREATE_VOLUME = "createVolume"
    UPDATE_VOLUME = "updateVolume"
    DELETE_VOLUME = "deleteVolume"
    UNDROP_VOLUME = "undropVolume"
    PURGE_DROPPED_VOLUME = "purgeDroppedVolume"
    CREATE_FUNCTION = "createFunction"
    DELETE_FUNCTION = "deleteFunction"
    CREATE_REGISTERED_MODEL = "createRegisteredModel"
    UPDATE_REGISTERED_MODEL = "updateRegisteredModel"
    DELETE_REGISTERED_MODEL = "deleteRegisteredModel"
    CREATE_MODEL_VERSION = "createModelVersion"
    UPDATE_MODEL_VERSION = "updateModelVersion"
    FINALIZE_MODEL_VERSION = "finalizeModelVersion"
    DELETE_MODEL_VERSION = "deleteModelVersion"
    CREATE_CREDENTIAL = "createCredential"
    UPDATE_CREDENTIAL = "updateCredential"
    DELETE_CREDENTIAL = "deleteCredential"
    CREATE_EXTERNAL_LOCATION = "createExternalLocation"
    UPDATE_EXTERNAL_LOCATION = "updateExternalLocation"
    DELETE_EXTERNAL_LOCATION = "deleteExternalLocation"
    UPDATE_PERMISSIONS = "updatePermissions"
    # reads of data: credentials vended, requests signed
    GENERATE_TEMPORARY_TABLE_CREDENTIALS = "generateTemporaryTableCredentials"
    GENERATE_TEMPORARY_VOLUME_CREDENTIALS = "generateTemporaryVolumeCredentials"
    GENERATE_TEMPORARY_PATH_CREDENTIALS = "generateTemporaryPathCredentials"
    GENERATE_TEMPORARY_MODEL_VERSION_CREDENTIALS = "generateTemporaryModelVersionCredentials"
    VEND_ICEBERG_CREDENTIALS = "vendIcebergCredentials"
    SIGN_ICEBERG_REQUEST = "signIcebergRequest"
    # groups and their members
    CREATE_GROUP = "createGroup"
    UPDATE_GROUP = "updateGroup"
    DELETE_GROUP = "deleteGroup"
    # principals and their keys
    CREATE_PRINCIPAL = "createPrincipal"
    DELETE_PRINCIPAL = "deletePrincipal"
    UPDATE_PRINCIPAL = "updatePrincipal"
    SET_METASTORE_ADMIN = "setMetastoreAdmin"
    ISSUE_TOKEN = "issueToken"
    REVOKE_TOKEN = "revokeToken"
    CREATE_CLIENT_SECRET = "createClientSecret"
    ROTATE_CLIENT_SECRET = "rotateClientSecret"
    # an OpenID provider's users: their groups synced from a token, an IdP token exchanged for ucweb's
    SYNC_IDP_GROUPS = "syncIdpGroups"
    EXCHANGE_TOKEN = "exchangeToken"
    # maintenance: asked for by a principal, then run by the catalog
    REQUEST_MAINTENANCE = "requestMaintenance"
    MAINTENANCE_OPTIMIZE = "maintenanceOptimize"
    MAINTENANCE_CHECKPOINT = "maintenanceCheckpoint"
    MAINTENANCE_VACUUM = "maintenanceVacuum"
    MAINTENANCE_EXPIRE_SNAPSHOTS = "maintenanceExpireSnapshots"
    MAINTENANCE_REMOVE_ORPHANS = "maintenanceRemoveOrphans"
    MAINTENANCE_REWRITE_MANIFESTS = "maintenanceRewriteManifests"
