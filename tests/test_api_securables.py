"""Create, list, get, update, delete, the authorization matrix and query pins of every Unity
Catalog securable, from one declaration each (tests/api_cases.py). Tables, whose matrix needs
external locations and columns, have theirs in tests/test_uc_authz.py."""

from django.test import TestCase

from tests.api_cases import (
    CATALOG,
    IAM_ROLE,
    LANDING_URL,
    METASTORE,
    SCHEMA,
    USE_CATALOG,
    USE_SCHEMA,
    SecurableAPITests,
    allow,
    see,
)

IN_SHOP_SALES = {"catalog_name": "shop", "schema_name": "sales"}
USE_SHOP_SALES = ((CATALOG, USE_CATALOG), (SCHEMA, USE_SCHEMA))


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


class TestSchemas(SecurableAPITests, TestCase):
    kind = "schema"
    ref = SCHEMA
    list_path, list_key, detail_path = "/schemas?catalog_name=shop", "schemas", "/schemas/shop.sales"
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
    named `name`, and the privileges that create and read it (read also makes it visible)."""

    path: str
    name: str
    create_privilege: str
    read_privilege: str

    @staticmethod
    def body(name: str) -> dict:
        raise NotImplementedError

    def __init_subclass__(cls, **kwargs):
        cls.ref = f"{cls.kind}:shop.sales.{cls.name}"
        cls.setup = [(cls.path, cls.body(cls.name))]
        cls.list_path = f"{cls.path}?catalog_name=shop&schema_name=sales"
        cls.detail_path = f"{cls.path}/shop.sales.{cls.name}"
        cls.create_path, cls.created, cls.create_body = cls.path, f"{cls.kind}:shop.sales.fresh", cls.body("fresh")
        cls.create_checks = (see(SCHEMA), allow((cls.create_privilege, SCHEMA)))
        cls.create_needs = (*USE_SHOP_SALES, (SCHEMA, cls.create_privilege))
        cls.create_owner = SCHEMA
        cls.list_checks = (see(SCHEMA),)
        cls.get_checks = (see(cls.ref), allow((cls.read_privilege, cls.ref)))
        cls.list_needs = cls.get_needs = (*USE_SHOP_SALES, (cls.ref, cls.read_privilege))
        super().__init_subclass__(**kwargs)


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
    setup = [("/credentials", {"name": "lake", "aws_iam_role": IAM_ROLE}),
             ("/external-locations", {"name": "landing", "url": LANDING_URL, "credential_name": "lake"})]
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
