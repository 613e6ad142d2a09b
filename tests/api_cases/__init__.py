"""Shared test cases of the Unity Catalog API, one declaration per securable (NetBox's
`APIViewTestCases` are the model).

A test module declares a securable by subclassing `SecurableAPITests` (and `django.test.TestCase`)
with its paths, request bodies, the privileges of each operation and the order in which the
server checks them. From that the class gets:

- create, list, get, update and delete as a metastore admin, each checked for what it did;
- the authorization matrix of every operation, reading and changing the object's permissions
  included: anonymous, no grants, exactly the grants it needs (or any other set that serves as
  well) and each of them missing, the same grants on a container (inherited), every privilege but
  no ownership, the owner (with and without USE on the containers), the owners of the schema and
  catalog above it, and a metastore admin. Each call is checked for its status and error code,
  that a refusal changed nothing and was audited as DENIED with its status (mutations), that a
  success did what it says (what a role creates is its own; what it deletes leaves nothing inside
  and no grant behind) and was audited, and that a listing shows the object exactly when the role
  may see it;
- every operation with each malformed or unknown credential: a 401 that changes nothing;
- a pinned number of queries for get and list (tests/query_counts.json).

What a role may see and do is restated here on its own, from the rules in docs/security.md (and
catalog/resolve.py): the expected answer is never read from the server's code. Shared data is
built once per class (`setUpTestData`); each role runs in a savepoint that is rolled back.

The declarations live in `references.py` (the shared data's securables, their rows and grants),
`matrix.py` (roles, the checks of an operation and the answer each role must get) and
`securable_tests.py` (`SecurableAPITests`); a declaration imports what it needs from here.
"""

from __future__ import annotations

from tests.api_cases.matrix import (
    NOT_FOUND,
    SEEN_WITH,
    Op,
    Role,
    allow,
    own,
    roles_for,
    see,
    use_grants,
)
from tests.api_cases.references import (
    CATALOG,
    IAM_ROLE,
    IN_SCHEMA,
    LANDING_URL,
    METASTORE,
    SCHEMA,
    USE_CATALOG,
    USE_SCHEMA,
    chain,
    grant_all,
    grant_to_dave,
    grantee_of,
    holds,
    make_owner,
    row_of,
    snapshot,
    split,
)
from tests.api_cases.securable_tests import BAD_AUTHORIZATION, SecurableAPITests

__all__ = [
    "BAD_AUTHORIZATION",
    "CATALOG",
    "IAM_ROLE",
    "IN_SCHEMA",
    "LANDING_URL",
    "METASTORE",
    "NOT_FOUND",
    "SCHEMA",
    "SEEN_WITH",
    "USE_CATALOG",
    "USE_SCHEMA",
    "Op",
    "Role",
    "SecurableAPITests",
    "allow",
    "chain",
    "grant_all",
    "grant_to_dave",
    "holds",
    "make_owner",
    "own",
    "roles_for",
    "row_of",
    "see",
    "snapshot",
    "split",
    "use_grants",
]
