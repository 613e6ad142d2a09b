"""Create, list, get, update, delete, the authorization matrix (the object's permissions included)
and query pins of every Unity Catalog securable, from one declaration each (tests/api_cases/).
What the matrix does not cover (what lists show to whom, owners and grants at work, renames) is
in tests/test_uc_authz.py."""

from django.test import TestCase

from catalog.models import Table
from tests.api_cases import (
    CATALOG,
    IAM_ROLE,
    LANDING_URL,
    METASTORE,
    SCHEMA,
    USE_CATALOG,
    USE_SCHEMA,
    Op,
    SecurableAPITests,
    allow,
    grant_to_dave,
    holds,
    own,
    see,
)
from tests.helpers import external_table_body

IN_SHOP_SALES = {"catalog_name": "shop", "schema_name": "sales"}
USE_SHOP_SALES = ((CATALOG, USE_CATALOG), (SCHEMA, USE_SCHEMA))
# Credential lake and external location landing (on it), as the admin creates them.
LAKE_AND_LANDING = [("/credentials", {"name": "lake", "aws_iam_role": IAM_ROLE}),
                    ("/external-locations", {"name": "landing", "url": LANDING_URL, "credential_name": "lake"})]


class TestCatalogs(SecurableAPITests, TestCase):
    kind = "catalog"
    ref = CATALOG
    list_path, list_key, detail_path = "/catalogs", "catalogs", "/catalogs/shop"
    delete_path = "/catalogs/shop?force=true"
    create_path, create_body, created = "/catalogs", {"name": "fresh", "comment": "new"}, "catalog:fresh"
    create_checks = (allow(("CREATE CATALOG", METASTORE)),)
    create_needs = ((METASTORE, "CREATE CATALOG"),)
    create_action = "createCatalog"
    conflict_status = 400  # as the UC SDK expects (README, "Errors: one status per protocol")
    get_checks = (see(CATALOG),)
    get_needs = ((CATALOG, USE_CATALOG),)
    update_body = updated = {"comment": "changed"}
    update_action, delete_action = "updateCatalog", "deleteCatalog"

    def operations(self):
        """The metastore's own operations too: anyone signed in reads its summary and its
        permissions; only an admin changes them."""
        path = "/permissions/metastore/ucweb"
        return {
            **super().operations(),
            "get_metastore_summary": Op("get_metastore_summary", "get", "/metastore_summary"),
            "get_metastore_permissions": Op("get_metastore_permissions", "get", path),
            "update_metastore_permissions": Op(
                "update_metastore_permissions", "patch", path, grant_to_dave("CREATE CATALOG"), (own(METASTORE),),
                needed=None, action="updatePermissions", done=lambda who: holds("dave", METASTORE, "CREATE CATALOG")),
        }

    def test_authorization_metastore(self):
        self.run_matrix("get_metastore_summary", "get_metastore_permissions", "update_metastore_permissions")


class TestSchemas(SecurableAPITests, TestCase):
    """Holds a table and a volume: deleting the schema (forced) takes them along."""

    kind = "schema"
    ref = SCHEMA
    setup = [*LAKE_AND_LANDING,
             ("/tables", external_table_body("trips", f"{LANDING_URL}/trips")),
             ("/volumes", {"name": "raw", **IN_SHOP_SALES, "volume_type": "MANAGED"})]
    list_path, list_key, detail_path = "/schemas?catalog_name=shop", "schemas", "/schemas/shop.sales"
    delete_path = "/schemas/shop.sales?force=true"
    create_path, created = "/schemas", "schema:shop.fresh"
    create_body = {"name": "fresh", "catalog_name": "shop"}
    create_checks = (see(CATALOG), allow(("CREATE SCHEMA", CATALOG)))
    create_needs = ((CATALOG, USE_CATALOG), (CATALOG, "CREATE SCHEMA"))
    create_owner = CATALOG
    create_action = "createSchema"
    list_checks, list_needs = (see(CATALOG),), USE_SHOP_SALES
    get_checks, get_needs = (see(SCHEMA),), USE_SHOP_SALES
    update_body = updated = {"comment": "changed"}
    update_action, delete_action = "updateSchema", "deleteSchema"


class InShopSales(SecurableAPITests):
    """What lives in schema shop.sales, declared by its path, its name, the body that creates one
    named `name`, and the privileges that create and read it (read also makes it visible; any of
    `other_read_privileges` serves as well). `prerequisites` are posted before the object."""

    path: str
    name: str
    create_privilege: str
    read_privilege: str
    other_read_privileges: tuple = ()
    prerequisites: list = []

    @staticmethod
    def body(name: str) -> dict:
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs):
        cls.ref = f"{cls.kind}:shop.sales.{cls.name}"
        cls.setup = [*cls.prerequisites, (cls.path, cls.body(cls.name))]
        cls.list_path = f"{cls.path}?catalog_name=shop&schema_name=sales"
        cls.detail_path = f"{cls.path}/shop.sales.{cls.name}"
        cls.create_path, cls.created, cls.create_body = cls.path, f"{cls.kind}:shop.sales.fresh", cls.body("fresh")
        cls.create_checks = (see(SCHEMA), allow((cls.create_privilege, SCHEMA)))
        cls.create_needs = (*USE_SHOP_SALES, (SCHEMA, cls.create_privilege))
        cls.create_owner = SCHEMA
        cls.list_checks = (see(SCHEMA),)
        readers = (cls.read_privilege, *cls.other_read_privileges)
        cls.get_checks = (see(cls.ref), allow(*((privilege, cls.ref) for privilege in readers)))
        cls.list_needs = cls.get_needs = (*USE_SHOP_SALES, (cls.ref, cls.read_privilege))
        cls.get_alternatives = tuple((*USE_SHOP_SALES, (cls.ref, privilege)) for privilege in cls.other_read_privileges)
        super().__init_subclass__(**kwargs)


class TestTables(InShopSales, TestCase):
    """External tables, in a location where bob may create them whatever the role (the refusal
    without that privilege is in tests/test_uc_authz.py). MODIFY reads a table as SELECT does;
    tables have no update operation."""

    kind, path, name, list_key = "table", "/tables", "trips", "tables"
    create_privilege, read_privilege, other_read_privileges = "CREATE TABLE", "SELECT", ("MODIFY",)
    create_action, delete_action = "createTable", "deleteTable"
    conflict_status = 400  # as in the Unity Catalog API of ucweb.errors (the UC SDK expects it)
    prerequisites = LAKE_AND_LANDING
    base_grants = (("external_location:landing", "CREATE EXTERNAL TABLE"),)

    @staticmethod
    def body(name):
        return external_table_body(name, f"{LANDING_URL}/{name}")

    def was_created(self, who):
        return super().was_created(who) and Table.objects.filter(name="fresh", columns__name="amount").exists()


class TestVolumes(InShopSales, TestCase):
    kind, path, name, list_key = "volume", "/volumes", "raw", "volumes"
    create_privilege, read_privilege = "CREATE VOLUME", "READ VOLUME"
    create_action, update_action, delete_action = "createVolume", "updateVolume", "deleteVolume"
    update_body = updated = {"comment": "changed"}

    @staticmethod
    def body(name):
        return {"name": name, **IN_SHOP_SALES, "volume_type": "MANAGED"}


class TestFunctions(InShopSales, TestCase):
    """Functions have no update operation in the API."""

    kind, path, name, list_key = "function", "/functions", "score", "functions"
    create_privilege, read_privilege = "CREATE FUNCTION", "EXECUTE"
    create_action, delete_action = "createFunction", "deleteFunction"

    @staticmethod
    def body(name):
        return {"function_info": {
            "name": name, **IN_SHOP_SALES,
            "input_params": {"parameters": [{"name": "x", "type_text": "int", "type_json": '{"type":"int"}',
                                             "type_name": "INT", "position": 0}]},
            "data_type": "INT", "full_data_type": "int", "routine_body": "SQL", "routine_definition": "x + 1",
            "parameter_style": "S", "is_deterministic": True, "sql_data_access": "CONTAINS_SQL",
            "is_null_call": False, "security_type": "DEFINER", "specific_name": name,
        }}


class TestRegisteredModels(InShopSales, TestCase):
    kind, path, name, list_key = "registered_model", "/models", "churn", "registered_models"
    create_privilege, read_privilege = "CREATE MODEL", "EXECUTE"
    create_action, update_action, delete_action = (
        "createRegisteredModel", "updateRegisteredModel", "deleteRegisteredModel")
    update_body = updated = {"comment": "changed"}

    @staticmethod
    def body(name):
        return {"name": name, **IN_SHOP_SALES}


class TestModelVersions(SecurableAPITests, TestCase):
    """Versions are governed by their model: seeing it, owning it, or CREATE MODEL on its schema
    to add versions."""

    kind = "model_version"
    ref = "model_version:shop.sales.churn.1"
    governed_by = MODEL = "registered_model:shop.sales.churn"
    setup = [("/models", {"name": "churn", **IN_SHOP_SALES}),
             ("/models/versions", {"model_name": "churn", **IN_SHOP_SALES, "source": "file:///tmp/churn"})]
    list_path, list_key = "/models/shop.sales.churn/versions", "model_versions"
    detail_path = "/models/shop.sales.churn/versions/1"
    name_field = "version"
    create_path, created = "/models/versions", "model_version:shop.sales.churn.2"
    create_body = {"model_name": "churn", **IN_SHOP_SALES, "source": "file:///tmp/churn2"}
    create_checks = (see(MODEL), allow((None, MODEL), ("CREATE MODEL", SCHEMA)))
    create_needs = (*USE_SHOP_SALES, (MODEL, "EXECUTE"), (SCHEMA, "CREATE MODEL"))
    create_owner = MODEL
    create_action = "createModelVersion"
    list_checks = get_checks = (see(MODEL),)
    list_needs = get_needs = (*USE_SHOP_SALES, (MODEL, "EXECUTE"))
    update_body = updated = {"comment": "changed"}
    update_action, delete_action = "updateModelVersion", "deleteModelVersion"

    def shown_name(self, ref):
        return int(ref.rsplit(".", 1)[1])

    def test_create(self):
        """Versions are numbered: creating the same body again is a new version, not a conflict."""
        admin = self.client_with(self.admin_token)
        for number in (2, 3):
            response = self.call(admin, "post", self.create_path, self.create_body)
            assert response.status_code == 200, response.content
            assert response.json()["version"] == number


class TestCredentials(SecurableAPITests, TestCase):
    kind = "credential"
    ref = "credential:lake"
    setup = [("/credentials", {"name": "lake", "aws_iam_role": IAM_ROLE})]
    list_path, list_key, detail_path = "/credentials", "credentials", "/credentials/lake"
    create_path, created = "/credentials", "credential:fresh"
    create_body = {"name": "fresh", "aws_iam_role": IAM_ROLE}
    create_checks = (allow(("CREATE STORAGE CREDENTIAL", METASTORE)),)
    create_needs = ((METASTORE, "CREATE STORAGE CREDENTIAL"),)
    create_action = "createCredential"
    get_checks = (see(ref),)
    list_needs = get_needs = ((ref, "CREATE EXTERNAL LOCATION"),)
    update_body = updated = {"comment": "changed"}
    update_action, delete_action = "updateCredential", "deleteCredential"


class TestExternalLocations(SecurableAPITests, TestCase):
    kind = "external_location"
    ref = "external_location:landing"
    CREDENTIAL = "credential:lake"
    setup = LAKE_AND_LANDING
    list_path, list_key = "/external-locations", "external_locations"
    detail_path = "/external-locations/landing"
    create_path, created = "/external-locations", "external_location:fresh"
    create_body = {"name": "fresh", "url": "s3://lake/fresh", "credential_name": "lake"}
    create_checks = (allow(("CREATE EXTERNAL LOCATION", METASTORE)), see(CREDENTIAL),
                     allow(("CREATE EXTERNAL LOCATION", CREDENTIAL)))
    create_needs = ((METASTORE, "CREATE EXTERNAL LOCATION"), (CREDENTIAL, "CREATE EXTERNAL LOCATION"))
    create_action = "createExternalLocation"
    get_checks = (see(ref),)
    list_needs = get_needs = ((ref, "READ FILES"),)
    update_body = updated = {"comment": "changed"}
    update_action, delete_action = "updateExternalLocation", "deleteExternalLocation"
