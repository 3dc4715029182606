"""Console passwords: Argon2id, with the same work for unknown users."""

from __future__ import annotations

import argon2
import pytest

from rigway.gateway.identity.passwords import MAX_PASSWORD_LENGTH, Passwords


class CountingHasher(argon2.PasswordHasher):
    """Cheap parameters for tests; counts verifications."""

    def __init__(self) -> None:
        super().__init__(time_cost=1, memory_cost=1024, parallelism=1)
        self.verifications = 0

    def verify(self, hash: str | bytes, password: str | bytes) -> bool:  # type: ignore[override]
        self.verifications += 1
        return super().verify(hash, password)


@pytest.fixture
def hasher() -> CountingHasher:
    return CountingHasher()


@pytest.fixture
def passwords(hasher: CountingHasher) -> Passwords:
    return Passwords(hasher)


def test_right_password_verifies(passwords: Passwords) -> None:
    stored = passwords.hash("correct horse")

    assert passwords.verify(stored, "correct horse")


def test_wrong_password_refused(passwords: Passwords) -> None:
    assert not passwords.verify(passwords.hash("correct horse"), "battery staple")


def test_hash_is_argon2id_and_salted(passwords: Passwords) -> None:
    first, second = passwords.hash("same"), passwords.hash("same")

    assert first.startswith("$argon2id$")
    assert first != second


def test_unknown_user_refused_after_dummy_verification(
    passwords: Passwords, hasher: CountingHasher
) -> None:
    assert not passwords.verify(None, "anything")
    assert hasher.verifications == 1


def test_unknown_user_refused_even_with_dummy_password(passwords: Passwords) -> None:
    # Whatever the dummy hash's password was, None never verifies.
    assert not passwords.verify(None, "")


def test_damaged_hash_refused(passwords: Passwords) -> None:
    assert not passwords.verify("$argon2id$garbage", "password")


def test_overlong_password_refused(passwords: Passwords) -> None:
    long_password = "x" * (MAX_PASSWORD_LENGTH + 1)
    stored = passwords.hash("x" * MAX_PASSWORD_LENGTH)

    assert not passwords.verify(stored, long_password)
    with pytest.raises(ValueError, match="at most"):
        passwords.hash(long_password)


def test_hash_with_other_parameters_needs_rehash(passwords: Passwords) -> None:
    stronger = Passwords(argon2.PasswordHasher(time_cost=2, memory_cost=2048, parallelism=1))

    assert passwords.needs_rehash(stronger.hash("pw"))
    assert not passwords.needs_rehash(passwords.hash("pw"))


async def test_verify_in_thread_matches_verify(passwords: Passwords) -> None:
    stored = await passwords.hash_in_thread("pw")

    assert await passwords.verify_in_thread(stored, "pw")
