"""The Polaris-native API at /api/catalog/polaris/v1: generic tables and policies. Thin views:
parse, call one service, render. Errors are always the IcebergErrorResponse envelope."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework.response import Response

from catalog.choices import AuditAction
from catalog import pagination
from catalog.api.base import CatalogAPIView
from catalog.api.iceberg.base import identifiers
from catalog.api.iceberg.wire import IcebergErrorResponse
from catalog.api.polaris import wire
from catalog.services import generic_tables, policies
from catalog.services.common import validate_optional_bool
from ucweb.errors import iceberg_exception_handler

GENERIC_TAGS = ["Polaris Generic Table API"]
POLICY_TAGS = ["Polaris Policy API"]
NO_CONTENT = OpenApiResponse(description="Success, no content.")
PAGE = [
    OpenApiParameter("pageToken", str, description="Absent: every item; empty or a token: one page."),
    OpenApiParameter("pageSize", int),
]
POLICY_TYPE = OpenApiParameter("policyType", str, description="Only policies of this type.")
DELEGATION = OpenApiParameter(
    "Polaris-Generic-Table-Access-Delegation", str, OpenApiParameter.HEADER, enum=["vended-credentials"],
    description="vended-credentials: the answer carries short-lived credentials for the table's location.")
ERRORS = {code: IcebergErrorResponse for code in (400, 401, 403, 404)}
CONFLICT = {**ERRORS, 409: IcebergErrorResponse}


class PolarisView(CatalogAPIView):
    audit_securable_type = "policy"

    def get_exception_handler(self):
        return iceberg_exception_handler

    def refused_securable(self, request, kwargs) -> tuple[str, str]:
        # The common naming knows a path's prefix, namespace and table, not a policy: a refused change to
        # a policy is audited under the policy's own name.
        parts = [kwargs.get(key) for key in ("prefix", "namespace", "policy", "table")]
        return super().refused_securable(request, {**kwargs, "name": ".".join(part for part in parts if part)})


class GenericTablesView(PolarisView):
    audit_securable_type = "table"
    audit_actions = {"POST": AuditAction.CREATE_GENERIC_TABLE}

    @extend_schema(tags=GENERIC_TAGS, operation_id="listGenericTables", parameters=PAGE,
                   responses={200: wire.ListGenericTablesResponse, **ERRORS})
    def get(self, request, prefix, namespace):
        return identifiers(request, generic_tables.list_generic_tables(
            caller=request.user, prefix=prefix, namespace=namespace))

    @extend_schema(tags=GENERIC_TAGS, operation_id="createGenericTable", request=wire.CreateGenericTableRequest,
                   responses={200: wire.LoadGenericTableResponse, **CONFLICT})
    def post(self, request, prefix, namespace):
        return Response(wire.loaded_generic_table(generic_tables.create_generic_table(
            caller=request.user, prefix=prefix, namespace=namespace, body=self.body(request))))


def _delegation(request) -> str | None:
    return request.headers.get("Polaris-Generic-Table-Access-Delegation")


class GenericTableView(PolarisView):
    audit_securable_type = "table"
    audit_actions = {"DELETE": AuditAction.DROP_GENERIC_TABLE}

    @extend_schema(tags=GENERIC_TAGS, operation_id="loadGenericTable", parameters=[DELEGATION],
                   responses={200: wire.LoadGenericTableResponse, **ERRORS})
    def get(self, request, prefix, namespace, table):
        row, configs = generic_tables.load_generic_table(caller=request.user, prefix=prefix, namespace=namespace,
                                                         name=table, delegation=_delegation(request))
        return Response(wire.loaded_generic_table(row, configs))

    @extend_schema(tags=GENERIC_TAGS, operation_id="dropGenericTable", responses={204: NO_CONTENT, **ERRORS})
    def delete(self, request, prefix, namespace, table):
        generic_tables.drop_generic_table(caller=request.user, prefix=prefix, namespace=namespace, name=table)
        return Response(status=204)


class PoliciesView(PolarisView):
    audit_actions = {"POST": AuditAction.CREATE_POLICY}

    @extend_schema(tags=POLICY_TAGS, operation_id="listPolicies", parameters=[*PAGE, POLICY_TYPE],
                   responses={200: wire.ListPoliciesResponse, **ERRORS})
    def get(self, request, prefix, namespace):
        return identifiers(request, policies.list_policies(
            caller=request.user, prefix=prefix, namespace=namespace,
            policy_type=request.query_params.get("policyType")))

    @extend_schema(tags=POLICY_TAGS, operation_id="createPolicy", request=wire.CreatePolicyRequest,
                   responses={200: wire.LoadPolicyResponse, **CONFLICT})
    def post(self, request, prefix, namespace):
        return Response(wire.loaded_policy(policies.create_policy(
            caller=request.user, prefix=prefix, namespace=namespace, body=self.body(request))))


class PolicyView(PolarisView):
    audit_actions = {"PUT": AuditAction.UPDATE_POLICY, "DELETE": AuditAction.DROP_POLICY}

    @extend_schema(tags=POLICY_TAGS, operation_id="loadPolicy", responses={200: wire.LoadPolicyResponse, **ERRORS})
    def get(self, request, prefix, namespace, policy):
        return Response(wire.loaded_policy(policies.load_policy(caller=request.user, prefix=prefix,
                                                                namespace=namespace, name=policy)))

    @extend_schema(tags=POLICY_TAGS, operation_id="updatePolicy", request=wire.UpdatePolicyRequest,
                   responses={200: wire.LoadPolicyResponse, **CONFLICT})
    def put(self, request, prefix, namespace, policy):
        return Response(wire.loaded_policy(policies.update_policy(
            caller=request.user, prefix=prefix, namespace=namespace, name=policy, body=self.body(request))))

    @extend_schema(tags=POLICY_TAGS, operation_id="dropPolicy", responses={204: NO_CONTENT, **ERRORS},
                   parameters=[OpenApiParameter("detach-all", bool)])
    def delete(self, request, prefix, namespace, policy):
        detach_all = validate_optional_bool(request.query_params.get("detach-all"), field="detach-all")
        policies.drop_policy(caller=request.user, prefix=prefix, namespace=namespace, name=policy,
                             detach_all=detach_all)
        return Response(status=204)


class PolicyMappingsView(PolarisView):
    audit_actions = {"PUT": AuditAction.ATTACH_POLICY, "POST": AuditAction.DETACH_POLICY}

    @extend_schema(tags=POLICY_TAGS, operation_id="attachPolicy", request=wire.AttachPolicyRequest,
                   responses={204: NO_CONTENT, **CONFLICT})
    def put(self, request, prefix, namespace, policy):
        return self.change_mapping(policies.attach_policy, request, prefix, namespace, policy)

    @extend_schema(tags=POLICY_TAGS, operation_id="detachPolicy", request=wire.DetachPolicyRequest,
                   responses={204: NO_CONTENT, **ERRORS})
    def post(self, request, prefix, namespace, policy):
        return self.change_mapping(policies.detach_policy, request, prefix, namespace, policy)

    def change_mapping(self, change, request, prefix, namespace, policy):
        """Attaching and detaching take the same path and body, and both answer 204."""
        change(caller=request.user, prefix=prefix, namespace=namespace, name=policy, body=self.body(request))
        return Response(status=204)


class ApplicablePoliciesView(PolarisView):
    @extend_schema(tags=POLICY_TAGS, operation_id="getApplicablePolicies",
                   parameters=[*PAGE, OpenApiParameter("namespace", str), OpenApiParameter("target-name", str),
                               POLICY_TYPE],
                   responses={200: wire.GetApplicablePoliciesResponse, **ERRORS})
    def get(self, request, prefix):
        params = request.query_params
        items = policies.applicable_policies(
            caller=request.user, prefix=prefix, namespace=params.get("namespace") or None,
            target_name=params.get("target-name") or None, policy_type=params.get("policyType"))
        token = None
        if "pageToken" in params:
            items, token = pagination.paginate_list(items, max_results=params.get("pageSize"),
                                                   page_token=params.get("pageToken") or None,
                                                   key=lambda item: item.policy.policy_type)
        body = {"applicable-policies": [wire.applicable(item) for item in items]}
        if token:
            body["next-page-token"] = token
        return Response(body)
