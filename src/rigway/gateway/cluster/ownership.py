"""Which node holds each rig's host link.

One node alone holds every link it has (`SingleNode`). Several nodes keep a lease per
rig in Redis (`RedisOwnership`): `rigway:rig:<rig id>` names the node, and
`rigway:node:<node id>` the node's address for the others, both expiring after
`LEASE_S` unless refreshed. A dead node's leases vanish by themselves; a refresh or a
release is a compare-and-set (Lua), so a node that lost a rig to another can never
overwrite or delete the newer lease. The node id is drawn afresh at every start: a
restarted node inherits nothing of its previous life.

Redis decides routing only, never whether a session ends: an outage can misroute a
request (a 503 or 410 the client retries), not end or bill anything twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Protocol

from rigway.gateway.redis_clients import redis_client

_log = logging.getLogger(__name__)

LEASE_S = 15
REFRESH_INTERVAL_S = 5.0
_NODE_KEY = "rigway:node:{}"
_RIG_KEY = "rigway:rig:{}"
# KEYS[1] a lease, ARGV[1] the node that expects to hold it, ARGV[2] milliseconds.
_REFRESH_IF_HELD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
# The address of the other node holding a rig's link, if any (`RigOwnership.holder_url`).
HolderUrlOf = Callable[[str], Awaitable[str | None]]
# Of these rigs, those another node holds, with its address (`RigOwnership.holder_urls`).
HolderUrlsOf = Callable[[list[str]], Awaitable[dict[str, str]]]


async def held_by_no_other_node(rig_id: str) -> str | None:
    """A `HolderUrlOf` for one node alone (and the services' default before wiring)."""
    return None


async def held_by_no_other_nodes(rig_ids: list[str]) -> dict[str, str]:
    """A `HolderUrlsOf` for one node alone (and the services' default before wiring)."""
    return {}


_DELETE_IF_HELD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class RigOwnership(Protocol):
    node_id: str
    # True when other nodes may hold rigs too (Redis): several nodes share the store.
    is_shared: bool

    async def is_healthy(self) -> bool:
        """Whether the leases can be read now (else every host would look absent)."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def claim(self, rig_id: str) -> None:
        """This node now holds the rig's link (the newest link wins)."""
        ...

    async def release(self, rig_id: str) -> None:
        """This node's link of the rig closed (a newer lease elsewhere is kept)."""
        ...

    async def holder_url(self, rig_id: str) -> str | None:
        """The address of the other node that holds the rig's link; None when no other
        live node holds it (this node, or nobody)."""
        ...

    async def held_elsewhere(self, rig_ids: list[str]) -> set[str]:
        """Those of `rig_ids` whose link another live node holds (one round trip)."""
        ...

    async def holder_urls(self, rig_ids: list[str]) -> dict[str, str]:
        """Of `rig_ids`, those another live node holds, each with that node's address
        (`holder_url` of each, in two round trips in all)."""
        ...


class SingleNode:
    """One node: every link it holds is its own, and there is no other node."""

    is_shared = False

    def __init__(self) -> None:
        self.node_id = secrets.token_hex(8)

    async def is_healthy(self) -> bool:
        return True

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None

    async def claim(self, rig_id: str) -> None:
        return None

    async def release(self, rig_id: str) -> None:
        return None

    async def holder_url(self, rig_id: str) -> str | None:
        return None

    async def held_elsewhere(self, rig_ids: list[str]) -> set[str]:
        return set()

    async def holder_urls(self, rig_ids: list[str]) -> dict[str, str]:
        return {}


class RedisOwnership:
    is_shared = True

    def __init__(self, redis_url: str, node_url: str) -> None:
        self.node_id = secrets.token_hex(8)
        self._node_url = node_url
        self._client = redis_client(redis_url, decode_responses=True)
        self._refresh_if_held = self._client.register_script(_REFRESH_IF_HELD)
        self._delete_if_held = self._client.register_script(_DELETE_IF_HELD)
        self._held: set[str] = set()
        self._refresher: asyncio.Task[None] | None = None

    async def is_healthy(self) -> bool:
        try:
            return bool(await self._client.ping())
        except Exception:  # any failure to answer is "not healthy", never raised
            return False

    async def start(self) -> None:
        await self._register_node()
        self._refresher = asyncio.create_task(self._refresh_forever())

    async def stop(self) -> None:
        if self._refresher is not None:
            self._refresher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._refresher
        with contextlib.suppress(Exception):  # leaving: the leases expire anyway
            for rig_id in list(self._held):
                await self.release(rig_id)
            await self._client.delete(_NODE_KEY.format(self.node_id))
        await self._client.aclose()

    async def claim(self, rig_id: str) -> None:
        self._held.add(rig_id)
        try:
            await self._client.set(_RIG_KEY.format(rig_id), self.node_id, ex=LEASE_S)
        except Exception as exc:  # the refresh loop claims it again when Redis is back
            _log.warning("could not record that this node holds %s: %s", rig_id, exc)

    async def release(self, rig_id: str) -> None:
        self._held.discard(rig_id)
        try:
            await self._delete_if_held(keys=[_RIG_KEY.format(rig_id)], args=[self.node_id])
        except Exception as exc:  # the lease expires by itself
            _log.warning("could not release %s: %s", rig_id, exc)

    async def holder_url(self, rig_id: str) -> str | None:
        try:
            holder = await self._client.get(_RIG_KEY.format(rig_id))
            if holder is None or holder == self.node_id:
                return None
            url = await self._client.get(_NODE_KEY.format(holder))
        except Exception as exc:
            _log.warning("could not look up the node holding %s: %s", rig_id, exc)
            return None
        return url if isinstance(url, str) else None

    async def held_elsewhere(self, rig_ids: list[str]) -> set[str]:
        if not rig_ids:
            return set()
        try:
            holders = await self._client.mget([_RIG_KEY.format(rig_id) for rig_id in rig_ids])
            others = sorted({h for h in holders if h is not None and h != self.node_id})
            alive = await self._client.mget([_NODE_KEY.format(node) for node in others])
        except Exception as exc:
            _log.warning("could not look up which nodes hold the rigs: %s", exc)
            return set()
        live_nodes = {node for node, url in zip(others, alive, strict=True) if url is not None}
        return {rig for rig, holder in zip(rig_ids, holders, strict=True) if holder in live_nodes}

    async def holder_urls(self, rig_ids: list[str]) -> dict[str, str]:
        if not rig_ids:
            return {}
        try:
            holders = await self._client.mget([_RIG_KEY.format(rig_id) for rig_id in rig_ids])
            others = sorted({h for h in holders if h is not None and h != self.node_id})
            if not others:
                return {}
            urls = await self._client.mget([_NODE_KEY.format(node) for node in others])
        except Exception as exc:
            _log.warning("could not look up the nodes holding the rigs: %s", exc)
            return {}
        url_of = {node: url for node, url in zip(others, urls, strict=True) if isinstance(url, str)}
        return {
            rig: url_of[holder]
            for rig, holder in zip(rig_ids, holders, strict=True)
            if holder in url_of
        }

    async def _register_node(self) -> None:
        await self._client.set(_NODE_KEY.format(self.node_id), self._node_url, ex=LEASE_S)

    async def _refresh_forever(self) -> None:
        while True:
            await asyncio.sleep(REFRESH_INTERVAL_S)
            try:
                await self._refresh()
            except Exception as exc:  # Redis away: again next round
                _log.warning("could not refresh this node's leases: %s", exc)

    async def _refresh(self) -> None:
        await self._register_node()
        for rig_id in list(self._held):
            key = _RIG_KEY.format(rig_id)
            refreshed = await self._refresh_if_held(keys=[key], args=[self.node_id, LEASE_S * 1000])
            if not refreshed and rig_id in self._held:
                # Expired (Redis was away longer than a lease) and nobody took it:
                # this node still holds the link, so it claims the rig again. A newer
                # holder is never overwritten: SET NX.
                await self._client.set(key, self.node_id, ex=LEASE_S, nx=True)


def ownership_for(redis_url: str | None, node_url: str | None) -> RigOwnership:
    if redis_url is None or node_url is None:
        return SingleNode()
    return RedisOwnership(redis_url, node_url)
