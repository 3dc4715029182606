"""Small notices between the nodes of one service: "forget this cached thing".

A node that changes something other nodes cache (an API key revoked or created)
publishes a notice; every other node applies it at once. Without Redis there is one
node and nothing to tell. With Redis, notices go over one pub/sub channel. Pub/sub is
fire and forget: a node whose subscription drops may miss notices, so every time it
subscribes again it flushes those caches whole (`on_resubscribed`) before it trusts them.
Only small control messages travel here, never payloads.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections.abc import Callable
from typing import Any, Protocol

from rigway.gateway.redis_clients import redis_client

_log = logging.getLogger(__name__)

CHANNEL = "rigway:notices"
# The kinds of notice, `topic/verb` like the host link's ops.
API_KEY_FORGOTTEN = "api_key/forgotten"  # body: {"prefix"}: drop it from the key cache
# body: {"session_id", "rig_id", "reason"}: the node holding the rig restores its host
SESSION_ENDED = "session/ended"
RIG_UNPAIRED = "rig/unpaired"  # body: {"rig_id"}: the node holding its link closes it
# Reconnect delays after Redis drops: quick at first, then every few seconds.
_RETRY_DELAYS_S = (0.1, 0.5, 1.0, 2.0, 5.0)

NoticeHandler = Callable[[dict[str, Any]], None]


class Notices(Protocol):
    def publish(self, kind: str, body: dict[str, Any]) -> None:
        """Tell the other nodes (never this one: the caller already acted)."""
        ...

    def on(self, kind: str, handler: NoticeHandler) -> None: ...

    def on_resubscribed(self, handler: Callable[[], None]) -> None: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class NoOtherNodes:
    """One node: nobody to tell."""

    def publish(self, kind: str, body: dict[str, Any]) -> None:
        return None

    def on(self, kind: str, handler: NoticeHandler) -> None:
        return None

    def on_resubscribed(self, handler: Callable[[], None]) -> None:
        return None

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None


class RedisNotices:
    """Notices over Redis pub/sub (`redis.asyncio`, the `redis` extra)."""

    def __init__(self, redis_url: str) -> None:
        self._client = redis_client(redis_url)
        # Its own connection, never retried: a dropped subscription must reach `_listen`,
        # whose resubscribe flushes what notices may have been missed meanwhile.
        self._subscriber = redis_client(redis_url, retrying=False)
        self._node = secrets.token_hex(8)
        self._handlers: dict[str, list[NoticeHandler]] = {}
        self._resubscribed: list[Callable[[], None]] = []
        self._listener: asyncio.Task[None] | None = None
        self._publishing: set[asyncio.Task[None]] = set()
        # Set each time the subscription is (re)established: tests and start() wait on it.
        self.subscribed = asyncio.Event()

    def publish(self, kind: str, body: dict[str, Any]) -> None:
        message = json.dumps({"kind": kind, "from": self._node, "body": body})
        task = asyncio.create_task(self._publish(message))
        self._publishing.add(task)
        task.add_done_callback(self._publishing.discard)

    async def _publish(self, message: str) -> None:
        try:
            await self._client.publish(CHANNEL, message)
        except Exception as exc:  # Redis down: the others flush when they resubscribe
            _log.warning("could not publish a notice to the other nodes: %s", exc)

    def on(self, kind: str, handler: NoticeHandler) -> None:
        self._handlers.setdefault(kind, []).append(handler)

    def on_resubscribed(self, handler: Callable[[], None]) -> None:
        self._resubscribed.append(handler)

    async def start(self) -> None:
        self._listener = asyncio.create_task(self._listen())

    async def stop(self) -> None:
        if self._listener is not None:
            self._listener.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listener
        await asyncio.gather(*self._publishing, return_exceptions=True)
        await self._client.aclose()
        await self._subscriber.aclose()

    async def _listen(self) -> None:
        attempt = 0
        while True:
            try:
                async with self._subscriber.pubsub() as pubsub:
                    await pubsub.subscribe(CHANNEL)
                    attempt = 0
                    # Whatever was published while unsubscribed is lost: start clean.
                    for flush in self._resubscribed:
                        flush()
                    self.subscribed.set()
                    async for message in pubsub.listen():
                        if message.get("type") == "message":
                            self._deliver(message["data"])
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a dropped connection: resubscribe after a pause
                self.subscribed.clear()
                delay_s = _RETRY_DELAYS_S[min(attempt, len(_RETRY_DELAYS_S) - 1)]
                attempt += 1
                _log.warning(
                    "notices from the other nodes lost (%s); again in %.1f s", exc, delay_s
                )
                await asyncio.sleep(delay_s)

    def _deliver(self, data: bytes | str) -> None:
        try:
            notice = json.loads(data)
            kind, origin, body = notice["kind"], notice["from"], notice["body"]
        except (ValueError, KeyError, TypeError):
            _log.warning("a malformed notice was ignored")
            return
        if origin == self._node or not isinstance(body, dict):
            return
        for handler in self._handlers.get(kind, ()):
            handler(body)


def notices_for(redis_url: str | None) -> Notices:
    return NoOtherNodes() if redis_url is None else RedisNotices(redis_url)
