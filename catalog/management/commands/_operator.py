"""Who runs a management command: audit events of command-line actions name the operator, not
the principal the command acts on."""

import getpass


def add_operator_argument(parser) -> None:
    parser.add_argument(
        "--operator", default=None,
        help="Name to record in the audit trail as the one who ran this command (default: cli:<OS user>).",
    )


def operator_name(value: str | None) -> str:
    if value:
        return value
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no login name and no passwd entry (some containers)
        user = "unknown"
    return f"cli:{user}"
