from django.core.management.base import BaseCommand, CommandError

from catalog.management.commands._operator import add_operator_argument, operator_name
from catalog.services import principals
from ucweb.errors import CatalogError


class Command(BaseCommand):
    help = "Creates principal NAME if needed and prints a new bearer token for it on the last line."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--admin", action="store_true", help="Make the principal a metastore admin.")
        parser.add_argument(
            "--service-principal", action="store_true",
            help="Also create a client id and secret (for the OAuth client-credentials flow).",
        )
        parser.add_argument(
            "--rotate", action="store_true",
            help="Replace the client secret of a service principal that already has one.",
        )
        add_operator_argument(parser)

    def handle(self, *args, name, admin, service_principal, rotate, operator, **options):
        actor = operator_name(operator)
        if rotate and not service_principal:
            raise CommandError("--rotate replaces a service principal's client secret: use it with --service-principal.")
        try:
            if service_principal:
                principal, client_id, client_secret = principals.create_service_principal(
                    name=name, admin=admin, rotate=rotate, actor=actor)
                self.stdout.write(f"client_id: {client_id}")
                self.stdout.write(f"client_secret: {client_secret}")
            else:
                principal = principals.ensure_principal(name=name, admin=admin, actor=actor)
            token = principals.issue_token(principal=principal, description="issue_token command", actor=actor)
        except CatalogError as exc:
            raise CommandError(exc.message) from None
        role = "metastore admin" if principal.is_metastore_admin else "principal"
        self.stdout.write(f"token for {role} {principal.name}:")
        self.stdout.write(token)
