"""The API key cache never outlives a revocation, even one racing a cache fill, and
remembers unknown keys without ever refusing a key created after them."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from rigway.gateway.api_keys import service as key_service
from rigway.gateway.api_keys.schemas import CreateKeyIn
from rigway.gateway.auth import api_key_auth
from rigway.gateway.auth.api_key_auth import ApiKeyAuthenticator, NewApiKey, generate_api_key
from rigway.gateway.clock import FakeClock
from rigway.gateway.errors import InvalidApiKey
from tests.e2e.harness import Stack, running_stack

pytestmark = pytest.mark.postgres


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def stack(tmp_path: Path, database_url: str, clock: FakeClock) -> AsyncIterator[Stack]:
    async with running_stack(tmp_path / "state", database_url, rigs=0, clock=clock) as running:
        yield running


class CountedReads:
    """The authenticator's session factory, counting the sessions it opens."""

    def __init__(self, authenticator: ApiKeyAuthenticator) -> None:
        self.opened = 0
        self._real = authenticator._db_sessions
        authenticator._db_sessions = self  # type: ignore[assignment]

    def __call__(self) -> Any:
        self.opened += 1
        return self._real()

    def begin(self) -> Any:
        return self._real.begin()


def _after_the_next_read(
    authenticator: ApiKeyAuthenticator, change: Callable[[], Awaitable[object]]
) -> None:
    """The authenticator's next read runs to its end, then `change` commits before the
    read's answer is used: a store change racing a cache fill."""
    real_db_sessions = authenticator._db_sessions

    @contextlib.asynccontextmanager
    async def read_then_change() -> AsyncIterator[Any]:
        async with real_db_sessions() as db:
            yield db
        authenticator._db_sessions = real_db_sessions
        await change()

    authenticator._db_sessions = read_then_change  # type: ignore[assignment]


async def _refused(authenticator: ApiKeyAuthenticator, secret: str) -> bool:
    try:
        await authenticator.authenticate(f"Bearer {secret}")
    except InvalidApiKey:
        return True
    return False


async def test_a_revocation_landing_during_a_cache_fill_is_not_undone(stack: Stack) -> None:
    key = await stack.services.keys.create(stack.account_id, CreateKeyIn(name="racing"))
    authenticator = stack.services.api_keys
    # The key row is read; the revocation commits (and forgets) before the fill.
    _after_the_next_read(
        authenticator, lambda: stack.services.keys.revoke(stack.account_id, key.id)
    )
    await authenticator.authenticate(f"Bearer {key.secret}")  # raced: this one passes
    with pytest.raises(InvalidApiKey):
        await authenticator.authenticate(f"Bearer {key.secret}")


async def test_an_unknown_key_retried_costs_one_read_until_the_cache_ages(
    stack: Stack, clock: FakeClock
) -> None:
    authenticator = stack.services.api_keys
    reads = CountedReads(authenticator)
    unknown = generate_api_key("live").secret
    assert all([await _refused(authenticator, unknown) for _ in range(5)])
    assert reads.opened == 1
    clock.advance(31)
    assert await _refused(authenticator, unknown)
    assert reads.opened == 2


async def test_a_revoked_key_stays_refused_from_the_cache(stack: Stack) -> None:
    key = await stack.services.keys.create(stack.account_id, CreateKeyIn(name="old"))
    authenticator = stack.services.api_keys
    await stack.services.keys.revoke(stack.account_id, key.id)
    reads = CountedReads(authenticator)
    assert await _refused(authenticator, key.secret)
    assert await _refused(authenticator, key.secret)
    assert reads.opened == 1


@pytest.fixture
def upcoming(monkeypatch: pytest.MonkeyPatch) -> NewApiKey:
    """The key the next `keys.create` makes, known to the test beforehand."""
    key = generate_api_key("live")
    monkeypatch.setattr(key_service, "generate_api_key", lambda _environment: key)
    return key


async def _accepted(stack: Stack, secret: str) -> bool:
    principal = await stack.services.api_keys.authenticate(f"Bearer {secret}")
    return principal.account_id == stack.account_id


async def test_a_key_created_under_a_prefix_noted_unknown_works_at_once(
    stack: Stack, upcoming: NewApiKey
) -> None:
    assert await _refused(stack.services.api_keys, upcoming.secret)  # noted unknown
    created = await stack.services.keys.create(stack.account_id, CreateKeyIn(name="new"))
    assert created.secret == upcoming.secret
    assert await _accepted(stack, upcoming.secret)


async def test_the_unknown_cache_stays_bounded(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(api_key_auth, "_UNKNOWN_CACHE_MAX", 8)
    authenticator = stack.services.api_keys
    secrets = [generate_api_key("live").secret for _ in range(20)]
    for secret in secrets:
        assert await _refused(authenticator, secret)
    assert len(authenticator._unknown) == 8
    reads = CountedReads(authenticator)
    assert await _refused(authenticator, secrets[-1])  # among the newest: remembered
    assert await _refused(authenticator, secrets[0])  # evicted: read again
    assert reads.opened == 1


async def test_a_key_created_while_its_prefix_is_being_read_is_not_noted_unknown(
    stack: Stack, upcoming: NewApiKey
) -> None:
    authenticator = stack.services.api_keys
    # The read finds no key; the key is created (and its prefix forgotten) before the
    # read's answer is noted.
    _after_the_next_read(
        authenticator,
        lambda: stack.services.keys.create(stack.account_id, CreateKeyIn(name="racing")),
    )
    assert await _refused(authenticator, upcoming.secret)  # raced: the read saw nothing
    assert await _accepted(stack, upcoming.secret)
