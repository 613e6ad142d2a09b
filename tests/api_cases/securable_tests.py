"""`SecurableAPITests`, the tests every securable gets from its declaration: create, list, get,
update and delete as a metastore admin, the authorization matrix of each operation, bad
credentials, and query pins."""

from __future__ import annotations

import tempfile

from django.db import connection, transaction
from django.db.models import Q
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from catalog.choices import PRIVILEGES_BY_SECURABLE, AuditOutcome, SecurableType
from catalog.models import AuditEvent, Grant, Principal, Schema
from tests.api_cases.matrix import Op, Role, own, roles_for, see
from tests.api_cases.references import (
    CATALOG,
    IN_SCHEMA,
    METASTORE,
    SCHEMA,
    chain,
    grant_all,
    grantee_of,
    grant_to_dave,
    holds,
    make_owner,
    row_of,
    snapshot,
    split,
)
from tests.helpers import UC, grant
from tests.query_pins import assert_query_count

# Authorization headers that name no valid token: each is a 401, whatever the operation.
BAD_AUTHORIZATION = ("Bearer ucw_not-a-token", "Bearer", "Bearer ", "Basic x", "Basic YWRtaW46YWRtaW4=",
                     "Token abc", "ucw_abc")


class _Rollback(Exception):
    pass


class SecurableAPITests:
    """Mixed into `django.test.TestCase` by each declaration. Declarations set:

    kind            the securable type of the permissions API ("volume", ...)
    ref             the object built for the class ("volume:shop.sales.raw")
    setup           [(path, body), ...] posted by the admin after shop and shop.sales exist
    list_path, list_key, detail_path
    create_body, created (ref of what create makes), create_checks, create_needs
    get_checks, get_needs, get_alternatives (other grant sets that let one read it)
    base_grants     bob's grants in the shared data, whatever the role (see TestTables)
    update_body, updated (the fields a GET shows after the update)
    delete_path (default detail_path)
    """

    kind: str
    ref: str
    setup: list = []
    list_path: str
    list_key: str
    detail_path: str
    delete_path: str | None = None
    create_path: str
    create_body: dict
    created: str
    create_checks: tuple
    create_needs: tuple
    create_action: str
    get_checks: tuple
    get_needs: tuple
    get_alternatives: tuple = ()
    base_grants: tuple = ()
    update_body: dict | None = None
    updated: dict | None = None
    update_action: str | None = None
    delete_action: str
    list_checks: tuple = ()
    list_needs: tuple = ()
    name_field: str = "name"
    conflict_status: int = 409  # creating what exists
    # What an owner owns to be allowed to create one (None: nobody below the metastore).
    create_owner: str | None = None
    # The securable whose ownership and visibility govern the object (a model version: its model).
    governed_by: str | None = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.update_body is None:  # a securable without an update operation
            cls.test_update = cls.test_authorization_update = None
        elif cls.test_update is None:  # declared below a base that has none
            cls.test_update = SecurableAPITests.test_update
            cls.test_authorization_update = SecurableAPITests.test_authorization_update

    @classmethod
    def setUpClass(cls):
        cls._storage = tempfile.TemporaryDirectory()
        cls.enterClassContext(override_settings(UCWEB_STORAGE_ROOT=f"file://{cls._storage.name}"))
        super().setUpClass()

    @classmethod
    def tearDownClass(cls):
        super().tearDownClass()
        cls._storage.cleanup()

    @classmethod
    def setUpTestData(cls):
        from django.core.management import call_command

        from catalog.services import principals

        call_command("bootstrap", verbosity=0)
        admin = principals.ensure_principal(name="admin", admin=True)
        for name in ("bob", "carol", "dave"):
            principals.ensure_principal(name=name)
        cls.admin_token = principals.issue_token(principal=admin)
        cls.bob_token = principals.issue_token(principal=Principal.objects.get(name="bob"))
        client = cls.client_with(cls.admin_token)
        for path, body in [("/catalogs", {"name": "shop"}), ("/schemas", {"name": "sales", "catalog_name": "shop"}),
                           *cls.setup]:
            response = client.post(f"{UC}{path}", body, format="json")
            assert response.status_code == 200, (path, response.content)
        grant_all("bob", cls.base_grants)
        # carol reads the object: a delete must take her grants on it (and inside it) along.
        grant_all("carol", cls.get_needs)

    @staticmethod
    def client_with(token: str | None) -> APIClient:
        client = APIClient()
        if token is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
        return client

    def call(self, client: APIClient, method: str, path: str, body=None):
        if body is None:
            return getattr(client, method)(f"{UC}{path}")
        return getattr(client, method)(f"{UC}{path}", body, format="json")

    # -- the operations ----------------------------------------------------------------------------
    def operations(self) -> dict[str, Op]:
        owner_only = (see(self.governor), own(self.governor))
        ops = {
            "create": Op("create", "post", self.create_path, self.create_body, self.create_checks, self.create_needs,
                         owned=self.create_owner, action=self.create_action, done=self.was_created),
            "list": Op("list", "get", self.list_path, checks=self.list_checks, needed=self.list_needs,
                       alternatives=self.list_alternatives(), owned=self.governor,
                       lists=(self.list_key, self.governor)),
            "get": Op("get", "get", self.detail_path, checks=self.get_checks, needed=self.get_needs,
                      alternatives=self.get_alternatives, owned=self.governor),
            "delete": Op("delete", "delete", self.delete_path or self.detail_path, checks=owner_only, needed=None,
                         owned=self.governor, action=self.delete_action, done=lambda who: self.was_deleted()),
        }
        if self.update_body is not None:
            ops["update"] = Op("update", "patch", self.detail_path, self.update_body, owner_only, needed=None,
                               owned=self.governor, action=self.update_action, done=lambda who: self.was_updated())
        if self.kind in PRIVILEGES_BY_SECURABLE:
            # Reading the privileges on the object needs what seeing it needs; changing them needs
            # ownership.
            path = f"/permissions/{self.kind}/{split(self.ref)[1]}"
            granted = next(privilege for ref, privilege in self.get_needs if ref == self.ref)
            ops["get_permissions"] = Op("get_permissions", "get", path, checks=(see(self.ref),),
                                        needed=self.get_needs, alternatives=self.get_alternatives, owned=self.ref)
            ops["update_permissions"] = Op(
                "update_permissions", "patch", path, grant_to_dave(granted), owner_only, needed=None,
                owned=self.ref, action="updatePermissions", done=lambda who: holds("dave", self.ref, granted))
        return ops

    def list_alternatives(self) -> tuple:
        """The other grant sets that show the object in its listing (those that let one read it,
        where the listing needs what reading needs)."""
        return self.get_alternatives if self.list_needs == self.get_needs else ()

    @property
    def governor(self) -> str:
        return self.governed_by or self.ref

    def shown_name(self, ref: str):
        """How the object of `ref` is named in a response (its `name_field`)."""
        return split(ref)[1].split(".")[-1]

    def exists(self, ref: str) -> bool:
        try:
            row_of(ref)
        except Exception:
            return False
        return True

    def was_created(self, who: str) -> bool:
        """The created object exists and is its creator's (a model version, which has no owner of
        its own, records who created it)."""
        if not self.exists(self.created):
            return False
        row = row_of(self.created)
        return (row.owner if hasattr(row, "owner") else row.created_by) == who

    def was_deleted(self) -> bool:
        """Gone, with everything inside it and every grant on either."""
        if self.exists(self.ref):
            return False
        kind, name = split(self.ref)
        parts = name.split(".")
        inside = {
            "catalog": [Schema.objects.filter(catalog__name=name)],
            "schema": [model.objects.filter(schema__catalog__name=parts[0], schema__name=parts[-1])
                       for model in IN_SCHEMA.values()],
        }.get(kind, [])
        grants = Grant.objects.filter(Q(securable_type=kind, securable_name=name) | Q(
            securable_type__in=[SecurableType.SCHEMA, *IN_SCHEMA], securable_name__startswith=f"{name}."))
        return not grants.exists() and not any(rows.exists() for rows in inside)

    def was_updated(self) -> bool:
        response = self.call(self.client_with(self.admin_token), "get", self.detail_path)
        return response.status_code == 200 and all(response.json().get(k) == v for k, v in self.updated.items())

    def every_privilege(self) -> tuple:
        refs = [METASTORE, CATALOG, SCHEMA, *[r for r in chain(self.governor) if r not in (CATALOG, SCHEMA)]]
        return tuple((ref, privilege) for ref in refs for privilege in sorted(PRIVILEGES_BY_SECURABLE[split(ref)[0]]))

    # -- running one role --------------------------------------------------------------------------
    def check_role(self, op: Op, role: Role) -> str | None:
        """Run `op` as `role` in a savepoint that is rolled back; the mismatch, or None."""
        try:
            with transaction.atomic():
                problem = self._check_role(op, role)
                raise _Rollback(problem)
        except _Rollback as rollback:
            return rollback.args[0]

    def _check_role(self, op: Op, role: Role) -> str | None:
        if role.anonymous:
            client = self.client_with(None)
        elif role.admin:
            client = self.client_with(self.admin_token)
        else:
            client = self.client_with(self.bob_token)
            grant_all(grantee_of("bob", role.through_groups), role.grants)
            if role.owns:
                make_owner("bob", role.owns)
        principal = "admin" if role.admin else "bob"
        before = snapshot()
        last_event = AuditEvent.objects.order_by("-id").values_list("id", flat=True).first() or 0

        response = self.call(client, op.method, op.path, op.body)

        events = [(e.principal, e.action, e.outcome, e.details)
                  for e in AuditEvent.objects.filter(id__gt=last_event).order_by("id")]
        status, code = op.expected(role)
        if response.status_code != status:
            return f"status {response.status_code}, expected {status}: {response.content[:300]!r}"
        body = response.json()
        if status != 200:
            if set(body) != {"error_code", "message", "details"} or body["error_code"] != code:
                return f"error {body}, expected {code}"
            if snapshot() != before:
                return "a refused request changed the database"
            if status == 401:
                if not response["WWW-Authenticate"].startswith("Bearer"):
                    return f"a 401 challenges with {response['WWW-Authenticate']!r}"
                return f"an unauthenticated request was audited: {events}" if events else None
            want = [(principal, AuditOutcome.DENIED, status)] if op.action else []
            refused = [(p, outcome, details.get("status")) for p, _, outcome, details in events]
            return None if refused == want else f"audit {events}, expected {want}"
        events = [event[:3] for event in events]
        if op.action:
            if not op.done(principal):
                return "answered 200 but did not happen"
            if events != [(principal, op.action, AuditOutcome.SUCCESS)]:
                return f"audit {events}, expected {[(principal, op.action, 'SUCCESS')]}"
            return None
        if snapshot() != before or events:
            return "a read changed the database or was audited"
        if op.lists:
            key, governor = op.lists
            names = [item[self.name_field] for item in body.get(key, [])]
            shown = self.shown_name(self.ref) in names
            if shown != (role.hidden(governor) is None):
                return f"listing shows {names}; the role {'sees' if not shown else 'does not see'} {governor}"
        return None

    def run_matrix(self, *names: str) -> None:
        self.run_op_matrix(*(self.operations()[name] for name in names))

    def run_op_matrix(self, *ops: Op) -> None:
        failures = []
        for op, role in ((op, role) for op in ops for role in roles_for(op, self.every_privilege())):
            # For a listing, allowed means that it shows the object.
            allowed = op.expected(role)[0] == 200 and (op.lists is None or role.hidden(op.lists[1]) is None)
            if role.declared and allowed != (role.declared == "allowed"):
                failures.append(f"{op.name} as {role.name}: the declaration says {role.declared}, its checks do not")
            problem = self.check_role(op, role)
            if problem:
                failures.append(f"{op.name} as {role.name}: {problem}")
        assert not failures, "\n".join(failures)

    # -- the tests ----------------------------------------------------------------------------------
    def test_create(self):
        admin = self.client_with(self.admin_token)
        response = self.call(admin, "post", self.create_path, self.create_body)
        assert response.status_code == 200, response.content
        assert self.exists(self.created)
        assert row_of(self.created).created_by == "admin"
        event = AuditEvent.objects.order_by("-id").first()
        assert (event.principal, event.action, event.outcome) == ("admin", self.create_action, AuditOutcome.SUCCESS)
        before = snapshot()
        again = self.call(admin, "post", self.create_path, self.create_body)
        assert again.status_code == self.conflict_status, again.content
        assert snapshot() == before

    def test_list_pages(self):
        """Page by page (one item a page), the listing holds every object once, in order."""
        admin = self.client_with(self.admin_token)
        everything = self.call(admin, "get", self.list_path).json()[self.list_key]
        names, token = [], None
        for _ in range(len(everything) + 1):
            separator = "&" if "?" in self.list_path else "?"
            page = self.call(admin, "get", f"{self.list_path}{separator}max_results=1"
                             + (f"&page_token={token}" if token else "")).json()
            assert len(page[self.list_key]) <= 1
            names += [item[self.name_field] for item in page[self.list_key]]
            token = page.get("next_page_token")
            if not token:
                break
        assert names == [item[self.name_field] for item in everything]
        assert self.shown_name(self.ref) in names

    def test_get(self):
        response = self.call(self.client_with(self.admin_token), "get", self.detail_path)
        assert response.status_code == 200, response.content
        assert response.json()[self.name_field] == self.shown_name(self.ref)

    def test_update(self):
        response = self.call(self.client_with(self.admin_token), "patch", self.detail_path, self.update_body)
        assert response.status_code == 200, response.content
        assert self.was_updated()

    def test_delete(self):
        admin = self.client_with(self.admin_token)
        response = self.call(admin, "delete", self.delete_path or self.detail_path)
        assert response.status_code == 200, response.content
        assert not self.exists(self.ref)
        response = self.call(admin, "get", self.detail_path)
        assert response.status_code == 404, response.content

    def test_authorization_create(self):
        self.run_matrix("create")

    def test_authorization_list(self):
        self.run_matrix("list")

    def test_authorization_get(self):
        self.run_matrix("get")

    def test_authorization_update(self):
        self.run_matrix("update")

    def test_authorization_delete(self):
        self.run_matrix("delete")

    def test_authorization_permissions(self):
        if self.kind in PRIVILEGES_BY_SECURABLE:
            self.run_matrix("get_permissions", "update_permissions")

    def test_bad_credentials(self):
        """Every operation, with each Authorization header that names no valid token."""
        failures = []
        for op in self.operations().values():
            for header in BAD_AUTHORIZATION:
                client = APIClient()
                client.credentials(HTTP_AUTHORIZATION=header)
                before, events = snapshot(), AuditEvent.objects.count()
                response = self.call(client, op.method, op.path, op.body)
                body = response.json()
                if (response.status_code, body.get("error_code")) != (401, "UNAUTHENTICATED") \
                        or set(body) != {"error_code", "message", "details"}:
                    failures.append(f"{op.name} with {header!r}: {response.status_code} {body}")
                elif not response["WWW-Authenticate"].startswith("Bearer"):
                    failures.append(f"{op.name} with {header!r}: challenged with {response['WWW-Authenticate']!r}")
                elif snapshot() != before or AuditEvent.objects.count() != events:
                    failures.append(f"{op.name} with {header!r}: changed the database or was audited")
        assert not failures, "\n".join(failures)

    def test_query_counts(self):
        """get and list as a principal holding exactly the grants that get needs."""
        for ref, privilege in self.get_needs:
            kind, name = split(ref)
            grant("bob", kind, name, privilege)
        bob = self.client_with(self.bob_token)
        for pin, path in ((f"uc get {self.kind}", self.detail_path), (f"uc list {self.list_key}", self.list_path)):
            self.call(bob, "get", path)  # warm: the token cache
            with CaptureQueriesContext(connection) as queries:
                response = self.call(bob, "get", path)
            assert response.status_code == 200, response.content
            assert_query_count(pin, len(queries.captured_queries))

