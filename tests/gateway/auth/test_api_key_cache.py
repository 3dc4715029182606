"""The API key cache never outlives a revocation, even one racing a cache fill."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rigway.gateway.errors import InvalidApiKey
from rigway.gateway.keys.schemas import CreateKeyIn
from tests.e2e.harness import Stack, running_stack


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(tmp_path / "state", database_url, rigs=0) as running:
        yield running


async def test_a_revocation_landing_during_a_cache_fill_is_not_undone(stack: Stack) -> None:
    key = await stack.services.keys.create(stack.account_id, CreateKeyIn(name="racing"))
    authenticator = stack.services.api_keys
    real_sessions = authenticator._sessions

    @contextlib.asynccontextmanager
    async def read_then_revoke() -> AsyncIterator[Any]:
        # The key row is read; the revocation commits (and forgets) before the fill.
        async with real_sessions() as db:
            yield db
        authenticator._sessions = real_sessions
        await stack.services.keys.revoke(stack.account_id, key.id)

    authenticator._sessions = read_then_revoke  # type: ignore[assignment]
    await authenticator.authenticate(f"Bearer {key.secret}")  # raced: this one passes
    with pytest.raises(InvalidApiKey):
        await authenticator.authenticate(f"Bearer {key.secret}")
