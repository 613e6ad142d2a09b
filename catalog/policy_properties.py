"""Who may change a securable's maintenance policy: the properties under POLICY_PROPERTY_PREFIX.

Table and schema properties under this prefix say which maintenance operations clients may run
themselves; they belong to the securable's owner, not to its writers. Every API that changes
properties (Delta commit metadata, Iceberg set-properties / remove-properties, views) calls
`require_unchanged_or_owner`."""

from catalog.authz import Access, describe

POLICY_PROPERTY_PREFIX = "ucweb.maintenance."


def policy_properties(properties) -> dict:
    return {key: value for key, value in (properties or {}).items()
            if key.lower().startswith(POLICY_PROPERTY_PREFIX)}


def require_unchanged_or_owner(access: Access, before, after) -> None:
    """Adding, changing or removing a `ucweb.maintenance.*` property needs the owner of the
    securable (or of a container above it) or a metastore admin. Properties that stay as they are
    need nothing more."""
    if policy_properties(before) == policy_properties(after):
        return
    access.require(
        access.owns(),
        f"Only the owner of {describe(access.chain[0])} or a metastore admin may change its "
        f"{POLICY_PROPERTY_PREFIX}* properties (its maintenance policy).",
    )
