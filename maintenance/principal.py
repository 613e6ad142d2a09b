"""The principal the catalog acts as when it changes tables itself (maintenance commits, runs)."""

from django.conf import settings

from catalog.choices import PrincipalKind
from catalog.models import Principal
from catalog.services import principals


def catalog_principal() -> Principal:
    """The service principal the catalog's own commits and runs are recorded under."""
    principal = Principal.objects.filter(name=settings.UCWEB_MAINTENANCE_PRINCIPAL).first()
    if principal is None or not principal.is_metastore_admin:
        principal = principals.ensure_principal(
            name=settings.UCWEB_MAINTENANCE_PRINCIPAL, admin=True, kind=PrincipalKind.SERVICE_PRINCIPAL)
    return principal
