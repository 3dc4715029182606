"""The embedded identity provider: local users, sign-in, console tokens, its JWKS.

Used by single-machine deployments (`rigway up`); a hosted deployment points the
gateway at an external provider's issuer, audience and JWKS URL instead.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker

from rigway.gateway.clock import Clock
from rigway.gateway.db.models import User
from rigway.gateway.errors import Conflict, InvalidConsoleToken
from rigway.gateway.identity import repository
from rigway.gateway.identity.passwords import Passwords
from rigway.gateway.identity.signing_keys import SigningKey, jwks
from rigway.gateway.identity.tokens import issue_console_token
from rigway.gateway.ids import new_id
from rigway.gateway.ratelimit import RateLimits


class IdentityProvider:
    def __init__(
        self,
        db_sessions: async_sessionmaker[DbSession],
        clock: Clock,
        key: SigningKey,
        *,
        issuer: str,
        audience: str,
        token_ttl_s: int,
        rate_limits: RateLimits,
        passwords: Passwords | None = None,
    ) -> None:
        self._rate_limits = rate_limits
        self._db_sessions = db_sessions
        self._clock = clock
        self._key = key
        self._issuer = issuer
        self._audience = audience
        self._token_ttl_s = token_ttl_s
        self._passwords = passwords if passwords is not None else Passwords()

    def jwks(self) -> dict[str, Any]:
        return jwks(self._key)

    async def create_user(self, account_id: str, email: str, password: str) -> str:
        password_hash = await self._passwords.hash_in_thread(password)
        user = User(
            id=new_id("usr"),
            account_id=account_id,
            email=email.strip().lower(),
            password_hash=password_hash,
            created_at=self._clock.now(),
        )
        try:
            async with self._db_sessions.begin() as db:
                db.add(user)
        except IntegrityError as exc:
            raise Conflict("a user with this email exists", code="user_exists") from exc
        return user.id

    async def user_exists(self, email: str) -> bool:
        async with self._db_sessions() as db:
            return await repository.has_user_with_email(db, email.strip().lower())

    async def sign_in(self, email: str, password: str, *, client_address: str | None) -> str:
        """A console token for a correct email and password; the same refusal (and the
        same argon2 cost) for an unknown email and a wrong password; 429 past the
        attempt quotas per client address and per email. `client_address` is None for
        a caller that is not on the network (`rigway up` signing its owner in)."""
        await self._rate_limits.hit_sign_in(email, client_address=client_address)
        async with self._db_sessions() as db:
            user = await repository.user_by_email(db, email.strip().lower())
        stored = user.password_hash if user is not None else None
        if not await self._passwords.verify_in_thread(stored, password) or user is None:
            raise InvalidConsoleToken("wrong email or password")
        return self.issue(user.id, user.account_id)

    def issue(self, subject: str, account_id: str) -> str:
        return issue_console_token(
            subject,
            account_id,
            self._issuer,
            self._audience,
            self._token_ttl_s,
            self._key,
            self._clock.now(),
        )
