"""`RigwayConsole` / `AsyncRigwayConsole`: the endpoints that take a console token.

A console token is the rig owner's signed-in JWT, not an API key (an API key gets 401
`invalid_console_token` here). It manages API keys, webhooks, rigs (API access, name,
unpair, pairing codes) and can list and kill the account's sessions.
"""

from __future__ import annotations

import builtins
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, Literal, TypeVar

import httpx2

from . import _core
from . import _operations as ops
from ._async import AsyncAPIClient, asyncio_sleep
from ._core import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from ._sync import SyncAPIClient
from .models import ApiKey, ApiKeyCreated, PairingCode, Rig, Session, Webhook, WebhookCreated

__all__ = ["AsyncRigwayConsole", "RigwayConsole"]

Environment = Literal["live", "test"]

ClientT = TypeVar("ClientT", SyncAPIClient, AsyncAPIClient)


class _ConsoleResource(Generic[ClientT]):
    """A group of console endpoints (`console.keys`, …) over the client that sends them.

    Sync and async groups differ only in `await`: each method builds its request with
    `_operations` and hands it to `ClientT._request`.
    """

    _client: ClientT

    def __init__(self, client: ClientT) -> None:
        self._client = client


# ------------------------------------------------------------------------- sync


class ConsoleKeys(_ConsoleResource[SyncAPIClient]):
    """`console.keys`: the account's API keys."""

    def list(self) -> builtins.list[ApiKey]:
        """Active API keys, by prefix only (`GET /v1/keys`)."""
        return self._client._request(ops.list_keys())

    def create(
        self,
        name: str,
        *,
        environment: Environment | None = None,
        scopes: Sequence[str] | None = None,
    ) -> ApiKeyCreated:
        """Create a key (`POST /v1/keys`); its full value is in `.secret`, this once only.

        `environment` defaults to `live`, `scopes` to all of them.
        """
        return self._client._request(ops.create_key(name, environment=environment, scopes=scopes))

    def revoke(self, key_id: str) -> ApiKey | None:
        """Revoke a key (`DELETE /v1/keys/{id}`): it answers 401 from then on.

        Returns the revoked key's record when the gateway sends one.
        """
        return self._client._request(ops.revoke_key(key_id))


class ConsoleWebhooks(_ConsoleResource[SyncAPIClient]):
    """`console.webhooks`: session webhooks (at most 5 per account)."""

    def list(self) -> builtins.list[Webhook]:
        """Registered webhooks (`GET /v1/webhooks`), without secrets."""
        return self._client._request(ops.list_webhooks())

    def create(self, url: str, *, events: Sequence[str] | None = None) -> WebhookCreated:
        """Register a public https `url` (`POST /v1/webhooks`); keep `.secret` now.

        `events` are `session.started` / `session.ended` (default both).
        """
        return self._client._request(ops.create_webhook(url, events=events))

    def update(
        self,
        webhook_id: str,
        *,
        enabled: bool | None = None,
        events: Sequence[str] | None = None,
    ) -> Webhook:
        """Enable/disable a webhook or change its events (`PATCH /v1/webhooks/{id}`)."""
        return self._client._request(ops.update_webhook(webhook_id, enabled=enabled, events=events))

    def delete(self, webhook_id: str) -> Webhook | None:
        """Delete a webhook (`DELETE /v1/webhooks/{id}`); its record when the gateway sends one."""
        return self._client._request(ops.delete_webhook(webhook_id))


class ConsoleRigs(_ConsoleResource[SyncAPIClient]):
    """`console.rigs`: owner-side rig management."""

    def update(
        self,
        rig_id: str,
        *,
        api_access_enabled: bool | None = None,
        name: str | None = None,
        app_mode_only: bool | None = None,
        owner_idle_s: int | None = None,
        recordings_allowed: bool | None = None,
    ) -> Rig:
        """Turn API access on/off, rename a rig, or set what API sessions may do on it
        (`app_mode_only`, `owner_idle_s` 0..3600, `recordings_allowed`) with
        `PATCH /v1/rigs/{id}`; arguments left None stay as they are."""
        return self._client._request(
            ops.update_rig(
                rig_id,
                api_access_enabled=api_access_enabled,
                name=name,
                app_mode_only=app_mode_only,
                owner_idle_s=owner_idle_s,
                recordings_allowed=recordings_allowed,
            )
        )

    def unpair(self, rig_id: str) -> Rig | None:
        """Unpair a rig (`DELETE /v1/rigs/{id}`); its active session ends `unpaired`.

        Returns the rig's last record when the gateway sends one.
        """
        return self._client._request(ops.unpair_rig(rig_id))

    def create_pairing_code(self) -> PairingCode:
        """A one-time code to pair a new host agent (`POST /v1/rigs/pairing-codes`)."""
        return self._client._request(ops.create_pairing_code())


class ConsoleSessions(_ConsoleResource[SyncAPIClient]):
    """`console.sessions`: all active sessions of the account, and the owner kill."""

    def list(self) -> builtins.list[Session]:
        """All active sessions of the account (`GET /v1/sessions` with a console token)."""
        return self._client._request(ops.list_sessions())

    def kill(self, session_id: str) -> Session:
        """End a session as its rig's owner (`POST /v1/sessions/{id}/kill`): `owner_kill`."""
        return self._client._request(ops.kill_session(session_id))


class RigwayConsole(SyncAPIClient):
    """Synchronous client of the console-token endpoints.

    `token` defaults to `RIGWAY_CONSOLE_TOKEN` and `base_url` to `RIGWAY_BASE_URL`, else
    to `console_token` and `base_url` in `.rigway/local.json` (found as `Rigway` finds
    it), else the URL to `http://127.0.0.1:8080`; the other arguments are those of
    `Rigway`.
    """

    keys: ConsoleKeys
    webhooks: ConsoleWebhooks
    rigs: ConsoleRigs
    sessions: ConsoleSessions

    def __init__(
        self,
        token: str | None = None,
        base_url: str | None = None,
        *,
        timeout: httpx2.Timeout | float | None = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        transport: httpx2.BaseTransport | None = None,
        http_client: httpx2.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        resolved_token, resolved_base_url = _core.resolve_connection(
            token, base_url, env_name=_core.CONSOLE_TOKEN_ENV, what="console token"
        )
        super().__init__(
            token=resolved_token,
            base_url=resolved_base_url,
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
            http_client=http_client,
            sleep=sleep,
            clock=clock,
            jitter=jitter,
        )
        self.keys = ConsoleKeys(self)
        self.webhooks = ConsoleWebhooks(self)
        self.rigs = ConsoleRigs(self)
        self.sessions = ConsoleSessions(self)


# ------------------------------------------------------------------------ async


class AsyncConsoleKeys(_ConsoleResource[AsyncAPIClient]):
    """`console.keys`: the account's API keys."""

    async def list(self) -> builtins.list[ApiKey]:
        """Active API keys, by prefix only (`GET /v1/keys`)."""
        return await self._client._request(ops.list_keys())

    async def create(
        self,
        name: str,
        *,
        environment: Environment | None = None,
        scopes: Sequence[str] | None = None,
    ) -> ApiKeyCreated:
        """Create a key (`POST /v1/keys`); its full value is in `.secret`, this once only."""
        return await self._client._request(
            ops.create_key(name, environment=environment, scopes=scopes)
        )

    async def revoke(self, key_id: str) -> ApiKey | None:
        """Revoke a key (`DELETE /v1/keys/{id}`); its record when the gateway sends one."""
        return await self._client._request(ops.revoke_key(key_id))


class AsyncConsoleWebhooks(_ConsoleResource[AsyncAPIClient]):
    """`console.webhooks`: session webhooks (at most 5 per account)."""

    async def list(self) -> builtins.list[Webhook]:
        """Registered webhooks (`GET /v1/webhooks`), without secrets."""
        return await self._client._request(ops.list_webhooks())

    async def create(self, url: str, *, events: Sequence[str] | None = None) -> WebhookCreated:
        """Register a public https `url` (`POST /v1/webhooks`); keep `.secret` now."""
        return await self._client._request(ops.create_webhook(url, events=events))

    async def update(
        self,
        webhook_id: str,
        *,
        enabled: bool | None = None,
        events: Sequence[str] | None = None,
    ) -> Webhook:
        """Enable/disable a webhook or change its events (`PATCH /v1/webhooks/{id}`)."""
        return await self._client._request(
            ops.update_webhook(webhook_id, enabled=enabled, events=events)
        )

    async def delete(self, webhook_id: str) -> Webhook | None:
        """Delete a webhook (`DELETE /v1/webhooks/{id}`); its record when the gateway sends one."""
        return await self._client._request(ops.delete_webhook(webhook_id))


class AsyncConsoleRigs(_ConsoleResource[AsyncAPIClient]):
    """`console.rigs`: owner-side rig management."""

    async def update(
        self,
        rig_id: str,
        *,
        api_access_enabled: bool | None = None,
        name: str | None = None,
        app_mode_only: bool | None = None,
        owner_idle_s: int | None = None,
        recordings_allowed: bool | None = None,
    ) -> Rig:
        """Turn API access on/off, rename a rig, or set what API sessions may do on it
        (`app_mode_only`, `owner_idle_s` 0..3600, `recordings_allowed`) with
        `PATCH /v1/rigs/{id}`; arguments left None stay as they are."""
        return await self._client._request(
            ops.update_rig(
                rig_id,
                api_access_enabled=api_access_enabled,
                name=name,
                app_mode_only=app_mode_only,
                owner_idle_s=owner_idle_s,
                recordings_allowed=recordings_allowed,
            )
        )

    async def unpair(self, rig_id: str) -> Rig | None:
        """Unpair a rig (`DELETE /v1/rigs/{id}`); its last record when the gateway sends one."""
        return await self._client._request(ops.unpair_rig(rig_id))

    async def create_pairing_code(self) -> PairingCode:
        """A one-time code to pair a new host agent (`POST /v1/rigs/pairing-codes`)."""
        return await self._client._request(ops.create_pairing_code())


class AsyncConsoleSessions(_ConsoleResource[AsyncAPIClient]):
    """`console.sessions`: all active sessions of the account, and the owner kill."""

    async def list(self) -> builtins.list[Session]:
        """All active sessions of the account (`GET /v1/sessions` with a console token)."""
        return await self._client._request(ops.list_sessions())

    async def kill(self, session_id: str) -> Session:
        """End a session as its rig's owner (`POST /v1/sessions/{id}/kill`): `owner_kill`."""
        return await self._client._request(ops.kill_session(session_id))


class AsyncRigwayConsole(AsyncAPIClient):
    """Asynchronous client of the console-token endpoints; see `RigwayConsole`."""

    keys: AsyncConsoleKeys
    webhooks: AsyncConsoleWebhooks
    rigs: AsyncConsoleRigs
    sessions: AsyncConsoleSessions

    def __init__(
        self,
        token: str | None = None,
        base_url: str | None = None,
        *,
        timeout: httpx2.Timeout | float | None = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        transport: httpx2.AsyncBaseTransport | None = None,
        http_client: httpx2.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio_sleep,
        clock: Callable[[], float] = time.time,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        resolved_token, resolved_base_url = _core.resolve_connection(
            token, base_url, env_name=_core.CONSOLE_TOKEN_ENV, what="console token"
        )
        super().__init__(
            token=resolved_token,
            base_url=resolved_base_url,
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
            http_client=http_client,
            sleep=sleep,
            clock=clock,
            jitter=jitter,
        )
        self.keys = AsyncConsoleKeys(self)
        self.webhooks = AsyncConsoleWebhooks(self)
        self.rigs = AsyncConsoleRigs(self)
        self.sessions = AsyncConsoleSessions(self)
