"""Kept for tests/test_uc_authz.py: `/permissions/{securable_type}/{full_name}` to a row lives in
catalog.resolve (`securable` for a caller, `securable_row` for anyone)."""

from catalog.resolve import securable_row as resolve

__all__ = ["resolve"]
