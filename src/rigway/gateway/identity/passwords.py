"""Console passwords: Argon2id hashes (argon2-cffi, RFC 9106 low-memory defaults).

An unknown user name still costs one Argon2 verification, against a dummy hash, so
response time does not tell which user names exist. The dummy is made by the first
verification of any kind (known user or not, so that one costs the same either way),
not at start-up: a gateway starts without spending an Argon2 hash it may never need.

Argon2 is deliberately slow (tens of milliseconds) and holds the CPU: from async code,
call `verify_in_thread` / `hash_in_thread` so the event loop keeps serving others.
"""

from __future__ import annotations

import asyncio
import secrets

import argon2
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

__all__ = ["MAX_PASSWORD_LENGTH", "Passwords"]

# Beyond this a "password" is an attempt to burn CPU; the hash of 1 KiB is plenty.
MAX_PASSWORD_LENGTH = 1024


class Passwords:
    def __init__(self, hasher: argon2.PasswordHasher | None = None) -> None:
        self._hasher = hasher if hasher is not None else argon2.PasswordHasher()
        self._dummy_hash: str | None = None

    def hash(self, password: str) -> str:
        if len(password) > MAX_PASSWORD_LENGTH:
            raise ValueError(f"a password is at most {MAX_PASSWORD_LENGTH} characters")
        return self._hasher.hash(password)

    def verify(self, stored_hash: str | None, password: str) -> bool:
        """True when `password` matches; `stored_hash` None means the user is unknown."""
        if self._dummy_hash is None:  # two threads may both make one: harmless
            self._dummy_hash = self._hasher.hash(secrets.token_urlsafe(24))
        target = self._dummy_hash if stored_hash is None else stored_hash
        candidate = password[:MAX_PASSWORD_LENGTH]
        try:
            self._hasher.verify(target, candidate)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False
        # Checked after the work, so an unknown user costs the same as a wrong password.
        return stored_hash is not None and len(password) <= MAX_PASSWORD_LENGTH

    def needs_rehash(self, stored_hash: str) -> bool:
        """True when the hash was made with older parameters: re-hash after a good login."""
        return self._hasher.check_needs_rehash(stored_hash)

    async def verify_in_thread(self, stored_hash: str | None, password: str) -> bool:
        return await asyncio.to_thread(self.verify, stored_hash, password)

    async def hash_in_thread(self, password: str) -> str:
        return await asyncio.to_thread(self.hash, password)
