"""API key rules: create (secret shown once, at most MAX_ACTIVE_KEYS_PER_ACCOUNT
active), list (prefix only), revoke."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker

from rigway.gateway.accounts.repository import lock_account
from rigway.gateway.api_keys import repository
from rigway.gateway.api_keys.schemas import ApiKeyCreatedOut, ApiKeyOut, CreateKeyIn
from rigway.gateway.auth.api_key_auth import ALL_SCOPES, ApiKeyAuthenticator, generate_api_key
from rigway.gateway.clock import Clock
from rigway.gateway.db.models import ApiKey
from rigway.gateway.errors import Conflict, NotFound
from rigway.gateway.ids import is_well_formed, new_uuid

# Each key has its own request quota; the cap bounds what an account's keys add up to
# before the account-wide ceiling (docs/api.md, Rate limits) and keeps the list short.
# Revoked keys do not count.
MAX_ACTIVE_KEYS_PER_ACCOUNT = 50


def _view(row: ApiKey) -> ApiKeyOut:
    return ApiKeyOut(
        id=row.id,
        name=row.name,
        key_prefix=row.key_prefix,
        environment=row.environment,  # type: ignore[arg-type]
        scopes=list(row.scopes),
        created_at=row.created_at,
        last_used_at=row.last_used_at,
    )


class KeyService:
    def __init__(
        self,
        db_sessions: async_sessionmaker[DbSession],
        clock: Clock,
        authenticator: ApiKeyAuthenticator,
    ) -> None:
        self._db_sessions = db_sessions
        self._clock = clock
        self._authenticator = authenticator

    async def create(self, account_id: str, request: CreateKeyIn) -> ApiKeyCreatedOut:
        new_key = generate_api_key(request.environment)
        scopes = list(ALL_SCOPES) if request.scopes is None else sorted(set(request.scopes))
        row = ApiKey(
            id=new_uuid(),
            account_id=account_id,
            name=request.name,
            key_prefix=new_key.prefix,
            key_hash=new_key.key_hash,
            environment=request.environment,
            scopes=scopes,
            created_at=self._clock.now(),
        )
        async with self._db_sessions.begin() as db:
            # Serialise creators of one account so the cap holds under races.
            await lock_account(db, account_id)
            if await repository.count_active(db, account_id) >= MAX_ACTIVE_KEYS_PER_ACCOUNT:
                raise Conflict(
                    f"an account has at most {MAX_ACTIVE_KEYS_PER_ACCOUNT} active keys; "
                    "revoke one first",
                    code="key_limit_reached",
                )
            db.add(row)
        # A prefix someone tried before this key existed is remembered as unknown.
        self._authenticator.forget(new_key.prefix)
        return ApiKeyCreatedOut(**_view(row).model_dump(), secret=new_key.secret)

    async def list(self, account_id: str) -> list[ApiKeyOut]:
        async with self._db_sessions() as db:
            return [_view(row) for row in await repository.list_active(db, account_id)]

    async def revoke(self, account_id: str, key_id: str) -> ApiKeyOut:
        async with self._db_sessions.begin() as db:
            row = await db.get(ApiKey, key_id) if is_well_formed(key_id) else None
            if row is None or row.account_id != account_id or row.revoked_at is not None:
                raise NotFound(code="key_not_found")
            await repository.revoke(db, key_id, self._clock.now())
        self._authenticator.forget(row.key_prefix)
        return _view(row)
