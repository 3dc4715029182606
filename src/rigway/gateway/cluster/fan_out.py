"""Reads that gather what several nodes know (the rig and session lists, the console's
live values): every node is asked at once, all of them together get `ASK_TIMEOUT_S` at
most, and the read goes on with the nodes that answered. A node that did not (gone,
slow, something else at its address, or an answer other than 200) leaves this node's
view of what it holds, so a dead node costs a list the timeout once, not once per node.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping

from starlette.requests import Request

from rigway.gateway.cluster.forwarding import ask
from rigway.gateway.cluster.peer_link import (
    ForwardedResponse,
    PeerClients,
    PeerTimeoutError,
    PeerUnavailableError,
)
from rigway.gateway.errors import ServiceUnavailable

_log = logging.getLogger(__name__)

# How long a read waits for the other nodes, all of them together.
ASK_TIMEOUT_S = 2.0


async def ask_nodes(
    request: Request,
    peers: PeerClients,
    path: str,
    queries: Mapping[str, str],
    timeout_s: float = ASK_TIMEOUT_S,
) -> dict[str, bytes]:
    """GET `path` of each node in `queries` (node address -> its query string) as the
    caller of `request`, all at once: the bodies of the 200 answers by node address."""
    return await first_answers(
        {
            node_url: ask(request, peers, node_url, path, query, timeout_s)
            for node_url, query in queries.items()
        },
        timeout_s,
    )


async def first_answers(
    asks: Mapping[str, Awaitable[ForwardedResponse]], timeout_s: float
) -> dict[str, bytes]:
    """Run `asks` (by node address) together for `timeout_s` at most in all: the bodies
    of those that answered 200 by then. The rest are cancelled."""
    tasks = {node_url: asyncio.ensure_future(asked) for node_url, asked in asks.items()}
    if not tasks:
        return {}
    try:
        await asyncio.wait(tasks.values(), timeout=timeout_s)
    finally:
        for task in tasks.values():
            task.cancel()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
    answers: dict[str, bytes] = {}
    for node_url, task in tasks.items():
        if task.cancelled():
            _log.info(
                "%s did not answer in %g s: its part is this node's view", node_url, timeout_s
            )
            continue
        failure = task.exception()
        if isinstance(failure, PeerUnavailableError | PeerTimeoutError | ServiceUnavailable):
            _log.info("%s did not answer (%s): its part is this node's view", node_url, failure)
            continue
        if failure is not None:
            raise failure
        answer = task.result()
        if answer.status != 200:
            _log.info("%s answered %d: its part is this node's view", node_url, answer.status)
            continue
        answers[node_url] = bytes(answer.body)
    return answers
