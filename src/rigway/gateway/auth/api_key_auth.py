"""API keys: `rgw_(live|test)_sk_<48 hex>`, stored as a SHA-256 hash with a lookup prefix.

A key carries 192 random bits, so a plain SHA-256 is a sound at-rest hash (no password
stretching is needed for a secret that cannot be guessed). Lookup is by the prefix
(the key up to and including its first 8 hex characters), then the hash is compared in
constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker

from rigway.gateway.api_keys import repository as api_key_repository
from rigway.gateway.clock import Clock
from rigway.gateway.errors import InsufficientScope, InvalidApiKey

KEY_PATTERN = re.compile(r"^rgw_(live|test)_sk_[0-9a-f]{48}$")
ALL_SCOPES: tuple[str, ...] = ("rigs:read", "rigs:wake", "sessions", "input", "apps", "stream")
_PREFIX_LENGTH = len("rgw_live_sk_") + 8
# last_used_at is bookkeeping, not an audit log: one write a minute per key is enough.
_LAST_USED_WRITE_INTERVAL = timedelta(seconds=60)
_CACHE_TTL_S = 30.0
# Prefixes the store does not know, remembered for as long as a known key's entry, so a
# client retrying a revoked or mistyped key costs a dict lookup per request instead of
# a query. Bounded: a stream of random keys evicts the oldest entries, never grows it.
_UNKNOWN_CACHE_MAX = 4096


@dataclass(frozen=True, slots=True)
class ApiPrincipal:
    account_id: str
    key_id: str
    environment: str
    scopes: frozenset[str]

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            raise InsufficientScope(f"this key lacks the {scope!r} scope")


@dataclass(frozen=True, slots=True)
class NewApiKey:
    secret: str
    prefix: str
    key_hash: str


def generate_api_key(environment: str) -> NewApiKey:
    secret = f"rgw_{environment}_sk_{secrets.token_hex(24)}"
    return NewApiKey(secret=secret, prefix=key_prefix(secret), key_hash=hash_secret(secret))


def key_prefix(secret: str) -> str:
    return secret[:_PREFIX_LENGTH]


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(slots=True)
class _CachedKey:
    principal: ApiPrincipal
    key_hash: bytes
    fetched_at: float
    last_used_at: datetime | None


class ApiKeyAuthenticator:
    """Resolves bearer keys to principals, with a short in-process cache of known keys
    and of prefixes the store does not have.

    Revocation and creation go through `forget()`, so either takes effect on the very
    next request, here and (through `on_forget`, the notices between nodes) on every
    other node of the service.
    """

    def __init__(self, db_sessions: async_sessionmaker[DbSession], clock: Clock) -> None:
        self._db_sessions = db_sessions
        self._clock = clock
        # Told the prefix of every key forgotten here, to tell the other nodes.
        self.on_forget: Callable[[str], None] = lambda prefix: None
        self._cache: dict[str, _CachedKey] = {}
        # prefix -> when the store last said it has no live key under it (monotonic s)
        self._unknown: dict[str, float] = {}
        # Bumped by every forget(): a load that read the row before a revocation
        # committed must not put the key back in the cache after it.
        self._generation = 0

    async def authenticate(self, authorization: str | None) -> ApiPrincipal:
        secret = _bearer(authorization)
        if secret is None or KEY_PATTERN.fullmatch(secret) is None:
            raise InvalidApiKey("missing or malformed API key")
        prefix = key_prefix(secret)
        cached = self._cache.get(prefix)
        if cached is None or self._clock.monotonic() - cached.fetched_at > _CACHE_TTL_S:
            if self._known_unknown(prefix):
                raise InvalidApiKey("unknown or revoked API key")
            cached = await self._load(prefix)
        if cached is None or not hmac.compare_digest(cached.key_hash, hash_secret(secret).encode()):
            raise InvalidApiKey("unknown or revoked API key")
        await self._touch(prefix, cached)
        return cached.principal

    def forget(self, prefix: str) -> None:
        """Drop what this node knows of `prefix`, and have the other nodes drop it too."""
        self.forget_here(prefix)
        self.on_forget(prefix)

    def forget_here(self, prefix: str) -> None:
        self._generation += 1
        self._cache.pop(prefix, None)
        self._unknown.pop(prefix, None)

    def forget_all(self) -> None:
        """Drop every cached key: after notices from other nodes may have been missed."""
        self._generation += 1
        self._cache.clear()
        self._unknown.clear()

    def _known_unknown(self, prefix: str) -> bool:
        noted_at = self._unknown.get(prefix)
        if noted_at is None:
            return False
        if self._clock.monotonic() - noted_at <= _CACHE_TTL_S:
            return True
        del self._unknown[prefix]
        return False

    def _note_unknown(self, prefix: str) -> None:
        self._unknown.pop(prefix, None)  # re-inserted last: the dict's order is age
        if len(self._unknown) >= _UNKNOWN_CACHE_MAX:
            del self._unknown[next(iter(self._unknown))]
        self._unknown[prefix] = self._clock.monotonic()

    async def _load(self, prefix: str) -> _CachedKey | None:
        generation = self._generation
        async with self._db_sessions() as db:
            row = await api_key_repository.active_by_prefix(db, prefix)
        if row is None:
            self._cache.pop(prefix, None)
            if generation == self._generation:
                # else: a key may have been created under it during the read.
                self._note_unknown(prefix)
            return None
        principal = ApiPrincipal(
            account_id=row.account_id,
            key_id=row.id,
            environment=row.environment,
            scopes=frozenset(row.scopes),
        )
        cached = _CachedKey(
            principal, row.key_hash.encode(), self._clock.monotonic(), row.last_used_at
        )
        if generation == self._generation:
            self._cache[prefix] = cached
        # else: a revocation may have landed during the read; this request used what it
        # read, and the next one reads again.
        return cached

    async def _touch(self, prefix: str, cached: _CachedKey) -> None:
        now = self._clock.now()
        if (
            cached.last_used_at is not None
            and now - cached.last_used_at < _LAST_USED_WRITE_INTERVAL
        ):
            return
        cached.last_used_at = now
        async with self._db_sessions.begin() as db:
            await api_key_repository.set_last_used(db, prefix, now)


def _bearer(authorization: str | None) -> str | None:
    if authorization is None:
        return None
    scheme, _, credentials = authorization.partition(" ")
    if scheme.lower() != "bearer" or not credentials:
        return None
    return credentials.strip()
