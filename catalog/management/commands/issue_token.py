from django.core.management.base import BaseCommand

from catalog.services import principals


class Command(BaseCommand):
    help = "Creates principal NAME if needed and prints a new bearer token for it on the last line."

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--admin", action="store_true", help="Make the principal a metastore admin.")
        parser.add_argument(
            "--service-principal", action="store_true",
            help="Also create a client id and secret (for the OAuth client-credentials flow).",
        )

    def handle(self, *args, name, admin, service_principal, **options):
        if service_principal:
            principal, client_id, client_secret = principals.create_service_principal(name=name, admin=admin)
            self.stdout.write(f"client_id: {client_id}")
            self.stdout.write(f"client_secret: {client_secret}")
        else:
            principal = principals.ensure_principal(name=name, admin=admin)
        role = "metastore admin" if principal.is_metastore_admin else "principal"
        self.stdout.write(f"token for {role} {principal.name}:")
        self.stdout.write(principals.issue_token(principal=principal, description="issue_token command"))
