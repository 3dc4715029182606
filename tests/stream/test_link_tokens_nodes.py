"""One-time link tokens of several nodes: keys derived from the shared secret key, one
kind of link per key, and a use that counts across nodes (a store of used jtis)."""

from __future__ import annotations

import pytest

from rigway.gateway.clock import FakeClock
from rigway.gateway.cluster.peer_link import peer_token
from rigway.gateway.stream.tokens import (
    TokenRejectedError,
    ViewerTokens,
    derived_key,
    link_tokens,
)

SECRET = b"bXktc2hhcmVkLXNlY3JldC1rZXktb2YtdGhpcnR5LXR3bz0="


class SharedUses:
    """The store of used jtis as every node sees it (Redis, in a real service)."""

    def __init__(self) -> None:
        self.used: dict[str, int] = {}
        self.answering = True
        self.closed = 0

    async def first_use(self, jti: str, ttl_s: int) -> bool:
        self._answer()
        if jti in self.used:
            return False
        self.used[jti] = ttl_s
        return True

    async def was_used(self, jti: str) -> bool:
        self._answer()
        return jti in self.used

    async def close(self) -> None:
        self.closed += 1

    def _answer(self) -> None:
        if not self.answering:
            raise ConnectionError("the store does not answer")


def _node(clock: FakeClock, shared: SharedUses) -> ViewerTokens:
    return ViewerTokens(clock.now, derived_key(SECRET, "stream"), shared)


def test_the_keys_are_the_services_and_one_per_kind_of_link() -> None:
    stream, takeover = derived_key(SECRET, "stream"), derived_key(SECRET, "takeover")
    assert stream == derived_key(SECRET, "stream")  # every node derives the same
    assert len(stream) == 32
    assert stream != takeover
    assert derived_key(SECRET + b"x", "stream") != stream
    assert stream.hex() != peer_token(SECRET)  # no key of the peer link reused


async def test_a_token_of_one_node_is_used_once_across_nodes() -> None:
    clock, shared = FakeClock(), SharedUses()
    node_a, node_b = _node(clock, shared), _node(clock, shared)
    token = node_a.issue("ses_1", "rig_1").token

    assert (await node_b.check(token)).session_id == "ses_1"
    claims = await node_b.use_once(token)
    with pytest.raises(TokenRejectedError) as refused:
        await node_a.use_once(token)
    assert refused.value.reason == "token_used"
    with pytest.raises(TokenRejectedError) as looked_at:
        await node_a.check(token)  # the page on the other node says so too
    assert looked_at.value.reason == "token_used"
    # Remembered until the token expires, no longer.
    assert shared.used[claims.jti] == 3600


async def test_a_store_that_does_not_answer_refuses_the_use_and_keeps_the_token() -> None:
    clock, shared = FakeClock(), SharedUses()
    node = _node(clock, shared)
    token = node.issue("ses_1", "rig_1").token
    shared.answering = False

    with pytest.raises(TokenRejectedError) as refused:
        await node.use_once(token)
    assert refused.value.reason == "unavailable"
    assert (await node.check(token)).session_id == "ses_1"  # a page is still shown

    shared.answering = True
    assert (await node.use_once(token)).session_id == "ses_1"


async def test_one_node_alone_keeps_random_keys_and_its_own_memory() -> None:
    clock = FakeClock()
    stream, takeover = link_tokens(clock.now, SECRET, None)
    other_stream, _ = link_tokens(clock.now, SECRET, None)
    token = stream.issue("ses_1", "rig_1").token

    with pytest.raises(TokenRejectedError) as foreign:
        other_stream.verify(token)  # a restart: the old links open nothing
    assert foreign.value.reason == "invalid_token"
    with pytest.raises(TokenRejectedError):
        takeover.verify(token)
    await stream.use_once(token)
    with pytest.raises(TokenRejectedError) as again:
        await stream.use_once(token)
    assert again.value.reason == "token_used"
