"""`rigway keys …` and `rigway webhooks …`: owner-side settings (console token).

The console token is the rig owner's signed-in token, not an API key: `--console-token`,
else `RIGWAY_CONSOLE_TOKEN`, else `console_token` in `<state dir>/local.json`.
"""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from rigway.client import ApiKey, Webhook

from ._context import (
    DEFAULT_STATE_DIR,
    BaseUrlOption,
    ConsoleTokenOption,
    JsonOption,
    StateDirOption,
    console_client,
)
from ._output import Column, Output

__all__ = ["keys_app", "webhooks_app"]

keys_app = typer.Typer(help="API keys of the account (console token).", no_args_is_help=True)
webhooks_app = typer.Typer(help="Session webhooks (console token).", no_args_is_help=True)


def _when(value: object) -> str:
    return "" if value is None else str(value)


_KEY_COLUMNS: tuple[Column[ApiKey], ...] = (
    Column("ID", lambda key: key.id),
    Column("NAME", lambda key: key.name),
    Column("PREFIX", lambda key: key.key_prefix),
    Column("ENV", lambda key: key.environment),
    Column("SCOPES", lambda key: " ".join(key.scopes)),
    Column("LAST USED", lambda key: _when(key.last_used_at)),
)

_WEBHOOK_COLUMNS: tuple[Column[Webhook], ...] = (
    Column("ID", lambda webhook: webhook.id),
    Column("URL", lambda webhook: webhook.url),
    Column("EVENTS", lambda webhook: " ".join(webhook.events)),
    Column("ENABLED", lambda webhook: "yes" if webhook.enabled else "no"),
    Column("LAST STATUS", lambda webhook: _when(webhook.last_status)),
)


@keys_app.command("list")
def list_keys(
    console_token: ConsoleTokenOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """List the account's API keys (by prefix; the keys themselves are never stored)."""
    out = Output(json_mode=json_output)
    with console_client(console_token, base_url, state_dir) as console:
        keys = console.keys.list()
    out.records(keys, _KEY_COLUMNS, title="API keys", json_key="keys")


@keys_app.command("create")
def create_key(
    name: Annotated[str, typer.Argument(help="A name to recognise the key by.")],
    environment: Annotated[
        Literal["live", "test"], typer.Option("--environment", help="live or test.")
    ] = "live",
    scopes: Annotated[
        list[str] | None,
        typer.Option("--scope", help="Grant only this scope (repeat); default all."),
    ] = None,
    console_token: ConsoleTokenOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Create an API key; its secret is shown this once only."""
    out = Output(json_mode=json_output)
    with console_client(console_token, base_url, state_dir) as console:
        created = console.keys.create(name, environment=environment, scopes=scopes)
    # The secret is excluded from repr, not from the dump: scripts need it this once.
    out.data(created, human=f"created {created.id} ({created.key_prefix}…)")
    out.line(f"secret (shown once, store it now): {created.secret}")


@keys_app.command("revoke")
def revoke_key(
    key_id: Annotated[str, typer.Argument(help="Key id (a UUID).")],
    console_token: ConsoleTokenOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Revoke an API key: it fails with 401 from its next request on."""
    out = Output(json_mode=json_output)
    with console_client(console_token, base_url, state_dir) as console:
        revoked = console.keys.revoke(key_id)
    out.data({"ok": True, "id": key_id, "key": revoked}, human=f"revoked {key_id}")


@webhooks_app.command("list")
def list_webhooks(
    console_token: ConsoleTokenOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """List the account's webhooks."""
    out = Output(json_mode=json_output)
    with console_client(console_token, base_url, state_dir) as console:
        webhooks = console.webhooks.list()
    out.records(webhooks, _WEBHOOK_COLUMNS, title="Webhooks", json_key="webhooks")


@webhooks_app.command("create")
def create_webhook(
    url: Annotated[str, typer.Argument(help="Public https URL that receives deliveries.")],
    events: Annotated[
        list[str] | None,
        typer.Option("--event", help="session.started or session.ended (repeat); default both."),
    ] = None,
    console_token: ConsoleTokenOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Register a webhook; its signing secret is shown this once only."""
    out = Output(json_mode=json_output)
    with console_client(console_token, base_url, state_dir) as console:
        created = console.webhooks.create(url, events=events)
    out.data(created, human=f"created {created.webhook.id} for {created.webhook.url}")
    out.line(f"signing secret (shown once, store it now): {created.secret}")
    if created.warning:
        out.warn(f"warning: {created.warning}")


@webhooks_app.command("delete")
def delete_webhook(
    webhook_id: Annotated[str, typer.Argument(help="Webhook id (a UUID).")],
    console_token: ConsoleTokenOption = None,
    base_url: BaseUrlOption = None,
    state_dir: StateDirOption = DEFAULT_STATE_DIR,
    json_output: JsonOption = False,
) -> None:
    """Delete a webhook."""
    out = Output(json_mode=json_output)
    with console_client(console_token, base_url, state_dir) as console:
        deleted = console.webhooks.delete(webhook_id)
    out.data({"ok": True, "id": webhook_id, "webhook": deleted}, human=f"deleted {webhook_id}")
