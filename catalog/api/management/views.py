"""The Polaris management API at /api/management/v1 (Polaris's management spec): catalogs,
principals, principal roles, catalog roles and their grants, on ucweb's groups and grants (see
catalog.services.polaris_management). Only a metastore admin may call it. Thin views: parse,
call one service, render. Errors are the Iceberg error envelope, as Polaris answers them."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from catalog.api.base import CatalogAPIView
from catalog.api.management import wire
from catalog.choices import AuditAction
from catalog.services import polaris_grants, polaris_management as management
from catalog.services.common import validate_optional_bool
from ucweb.errors import iceberg_exception_handler

TAGS = ["Polaris Management API"]
NO_CONTENT = OpenApiResponse(description="Success, no content.")
CREATED = OpenApiResponse(description="Success.")
ERRORS = {code: wire.PolarisManagementErrorResponse for code in (400, 401, 403, 404)}
CONFLICT = {**ERRORS, 409: wire.PolarisManagementErrorResponse}
CASCADE = OpenApiParameter("cascade", bool, description="Only false is accepted: a ucweb grant has no dependants.")


class ManagementView(CatalogAPIView):
    audit_securable_type = "catalog"

    def get_exception_handler(self):
        return iceberg_exception_handler

    def refused_securable(self, request, kwargs) -> tuple[str, str]:
        # A refusal is recorded under the names its path gave (catalog, role, principal).
        names = [kwargs[key] for key in ("catalog", "catalog_role", "principal", "role") if kwargs.get(key)]
        return self.audit_securable_type, ".".join(map(str, names))


def _schema(operation_id: str, *, request=None, response=None, status: int = 200, errors=ERRORS, parameters=None):
    responses = {status: response if response is not None else (NO_CONTENT if status == 204 else CREATED), **errors}
    return extend_schema(tags=TAGS, operation_id=operation_id, request=request, responses=responses,
                         parameters=parameters)


# -- catalogs ------------------------------------------------------------------------------------
class CatalogsView(ManagementView):
    audit_actions = {"POST": AuditAction.CREATE_CATALOG}

    @_schema("listPolarisCatalogs", response=wire.PolarisCatalogs)
    def get(self, request):
        return Response(wire.catalogs(management.list_catalogs(caller=request.user)))

    @_schema("createPolarisCatalog", request=wire.PolarisCreateCatalogRequest, response=wire.PolarisCatalog, status=201,
             errors=CONFLICT)
    def post(self, request):
        row = management.create_catalog(caller=request.user, body=self.body(request))
        return Response(wire.catalog(row), status=201)


class CatalogView(ManagementView):
    audit_actions = {"PUT": AuditAction.UPDATE_CATALOG, "DELETE": AuditAction.DELETE_CATALOG}

    @_schema("getPolarisCatalog", response=wire.PolarisCatalog)
    def get(self, request, catalog):
        return Response(wire.catalog(management.get_catalog(caller=request.user, name=catalog)))

    @_schema("updatePolarisCatalog", request=wire.PolarisUpdateCatalogRequest, response=wire.PolarisCatalog)
    def put(self, request, catalog):
        return Response(wire.catalog(management.update_catalog(caller=request.user, name=catalog,
                                                               body=self.body(request))))

    @_schema("deletePolarisCatalog", status=204, errors=CONFLICT)
    def delete(self, request, catalog):
        management.delete_catalog(caller=request.user, name=catalog)
        return Response(status=204)


# -- principals ----------------------------------------------------------------------------------
class PrincipalManagementView(ManagementView):
    audit_securable_type = "principal"


class PrincipalsView(PrincipalManagementView):
    audit_actions = {"POST": AuditAction.CREATE_PRINCIPAL}

    @_schema("listPrincipals", response=wire.PolarisPrincipals)
    def get(self, request):
        return Response(wire.principals(management.list_principals(caller=request.user)))

    @_schema("createPrincipal", request=wire.PolarisCreatePrincipalRequest, response=wire.PolarisPrincipalWithCredentials,
             status=201, errors=CONFLICT)
    def post(self, request):
        row, client_id, secret = management.create_principal(caller=request.user, body=self.body(request))
        return Response(wire.with_credentials(row, client_id, secret), status=201)


class PrincipalView(PrincipalManagementView):
    audit_actions = {"DELETE": AuditAction.DELETE_PRINCIPAL}

    @_schema("getPrincipal", response=wire.PolarisPrincipal)
    def get(self, request, principal):
        return Response(wire.principal(management.get_principal(caller=request.user, name=principal)))

    @_schema("deletePrincipal", status=204)
    def delete(self, request, principal):
        management.delete_principal(caller=request.user, name=principal)
        return Response(status=204)


class RotateCredentialsView(PrincipalManagementView):
    audit_actions = {"POST": AuditAction.ROTATE_CLIENT_SECRET}

    @_schema("rotateCredentials", response=wire.PolarisPrincipalWithCredentials)
    def post(self, request, principal):
        row, client_id, secret = management.rotate_credentials(caller=request.user, name=principal)
        return Response(wire.with_credentials(row, client_id, secret))


class PrincipalRolesAssignedView(PrincipalManagementView):
    audit_actions = {"PUT": AuditAction.UPDATE_GROUP}

    @_schema("listPrincipalRolesAssigned", response=wire.PolarisPrincipalRoles)
    def get(self, request, principal):
        return Response(wire.roles(management.principal_roles_of(caller=request.user, principal=principal)))

    @_schema("assignPrincipalRole", request=wire.PolarisPrincipalRoleRequest, status=201)
    def put(self, request, principal):
        management.assign_principal_role(caller=request.user, principal=principal, body=self.body(request))
        return Response(status=201)


class PrincipalRoleAssignmentView(PrincipalManagementView):
    audit_actions = {"DELETE": AuditAction.UPDATE_GROUP}

    @_schema("revokePrincipalRole", status=204)
    def delete(self, request, principal, role):
        management.revoke_principal_role(caller=request.user, principal=principal, role=role)
        return Response(status=204)


# -- principal roles -----------------------------------------------------------------------------
class PrincipalRolesView(ManagementView):
    audit_securable_type = ""
    audit_actions = {"POST": AuditAction.CREATE_GROUP}

    @_schema("listPrincipalRoles", response=wire.PolarisPrincipalRoles)
    def get(self, request):
        return Response(wire.roles(management.list_principal_roles(caller=request.user)))

    @_schema("createPrincipalRole", request=wire.PolarisPrincipalRoleRequest, response=wire.PolarisPrincipalRole, status=201,
             errors=CONFLICT)
    def post(self, request):
        return Response(wire.role(management.create_principal_role(caller=request.user, body=self.body(request))),
                        status=201)


class PrincipalRoleView(ManagementView):
    audit_securable_type = ""
    audit_actions = {"DELETE": AuditAction.DELETE_GROUP}

    @_schema("getPrincipalRole", response=wire.PolarisPrincipalRole)
    def get(self, request, role):
        return Response(wire.role(management.get_principal_role(caller=request.user, name=role)))

    @_schema("deletePrincipalRole", status=204)
    def delete(self, request, role):
        management.delete_principal_role(caller=request.user, name=role)
        return Response(status=204)


class PrincipalRolePrincipalsView(ManagementView):
    @_schema("listAssigneePrincipalsForPrincipalRole", response=wire.PolarisPrincipals)
    def get(self, request, role):
        return Response(wire.principals(management.principals_in_role(caller=request.user, role=role)))


class PrincipalRoleCatalogRolesView(ManagementView):
    audit_actions = {"PUT": AuditAction.UPDATE_GROUP}

    @_schema("listCatalogRolesForPrincipalRole", response=wire.PolarisCatalogRoles)
    def get(self, request, role, catalog):
        rows = management.catalog_roles_of(caller=request.user, principal_role=role, catalog=catalog)
        return Response(wire.roles(rows))

    @_schema("assignCatalogRoleToPrincipalRole", request=wire.PolarisCatalogRoleRequest, status=201)
    def put(self, request, role, catalog):
        management.assign_catalog_role(caller=request.user, principal_role=role, catalog=catalog,
                                       body=self.body(request))
        return Response(status=201)


class PrincipalRoleCatalogRoleView(ManagementView):
    audit_actions = {"DELETE": AuditAction.UPDATE_GROUP}

    @_schema("revokeCatalogRoleFromPrincipalRole", status=204)
    def delete(self, request, role, catalog, catalog_role):
        management.revoke_catalog_role(caller=request.user, principal_role=role, catalog=catalog, role=catalog_role)
        return Response(status=204)


# -- catalog roles and their grants --------------------------------------------------------------
class CatalogRolesView(ManagementView):
    audit_actions = {"POST": AuditAction.CREATE_GROUP}

    @_schema("listCatalogRoles", response=wire.PolarisCatalogRoles)
    def get(self, request, catalog):
        return Response(wire.roles(management.list_catalog_roles(caller=request.user, catalog=catalog)))

    @_schema("createCatalogRole", request=wire.PolarisCatalogRoleRequest, response=wire.PolarisCatalogRole, status=201,
             errors=CONFLICT)
    def post(self, request, catalog):
        row = management.create_catalog_role(caller=request.user, catalog=catalog, body=self.body(request))
        return Response(wire.role(row), status=201)


class CatalogRoleView(ManagementView):
    audit_actions = {"DELETE": AuditAction.DELETE_GROUP}

    @_schema("getCatalogRole", response=wire.PolarisCatalogRole)
    def get(self, request, catalog, catalog_role):
        return Response(wire.role(management.get_catalog_role(caller=request.user, catalog=catalog,
                                                              role=catalog_role)))

    @_schema("deleteCatalogRole", status=204)
    def delete(self, request, catalog, catalog_role):
        management.delete_catalog_role(caller=request.user, catalog=catalog, role=catalog_role)
        return Response(status=204)


class CatalogRolePrincipalRolesView(ManagementView):
    @_schema("listAssigneePrincipalRolesForCatalogRole", response=wire.PolarisPrincipalRoles)
    def get(self, request, catalog, catalog_role):
        rows = management.principal_roles_holding(caller=request.user, catalog=catalog, role=catalog_role)
        return Response(wire.roles(rows))


class CatalogRoleGrantsView(ManagementView):
    audit_actions = {"PUT": AuditAction.UPDATE_PERMISSIONS, "POST": AuditAction.UPDATE_PERMISSIONS}

    @_schema("listGrantsForCatalogRole", response=wire.PolarisGrantResources)
    def get(self, request, catalog, catalog_role):
        rows = polaris_grants.list_grants(caller=request.user, catalog=catalog, role=catalog_role)
        return Response(wire.grants(rows))

    @_schema("addGrantToCatalogRole", request=wire.PolarisGrantRequest, status=201)
    def put(self, request, catalog, catalog_role):
        polaris_grants.add_grant(caller=request.user, catalog=catalog, role=catalog_role, body=self.body(request))
        return Response(status=201)

    @_schema("revokeGrantFromCatalogRole", request=wire.PolarisGrantRequest, status=201, parameters=[CASCADE])
    def post(self, request, catalog, catalog_role):
        cascade = validate_optional_bool(request.query_params.get("cascade"), field="cascade")
        polaris_grants.revoke_grant(caller=request.user, catalog=catalog, role=catalog_role, body=self.body(request),
                                cascade=cascade)
        return Response(status=201)
