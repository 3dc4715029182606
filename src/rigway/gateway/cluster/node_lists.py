"""A list one node answers (the rigs, the sessions) with the entries other nodes hold
as those nodes see them: only the node that holds a rig's link or serves a session knows
its live parts (desktop state, displays, control, activity not yet written)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from pydantic import ValidationError
from starlette.requests import Request

from rigway.gateway.cluster.fan_out import ask_nodes
from rigway.gateway.cluster.peer_link import PeerClients

_log = logging.getLogger(__name__)

Entry = TypeVar("Entry")


async def as_their_nodes_see_them(
    request: Request,
    peers: PeerClients,
    path: str,
    entries: Sequence[Entry],
    held_by: Mapping[str, Sequence[str]],
    read_list: Callable[[bytes], list[Entry]],
    id_of: Callable[[Entry], str],
) -> list[Entry]:
    """`entries` (this node's view), those in `held_by` (their ids by the address of
    the node that holds them) as that node lists them at `path`: one read of each node's
    list, all at once (`ask_nodes`). A node that does not answer in time, or answers a
    list `read_list` cannot read, leaves this node's view of its entries."""
    answers = await ask_nodes(request, peers, path, dict.fromkeys(held_by, ""))
    theirs: dict[str, Entry] = {}
    for node_url, body in answers.items():
        try:
            listed = read_list(body)
        except ValidationError as exc:
            _log.info("%s of %s: this node's view stands: %s", path, node_url, exc)
            continue
        wanted = set(held_by[node_url])
        theirs |= {id_of(entry): entry for entry in listed if id_of(entry) in wanted}
    return [theirs.get(id_of(entry), entry) for entry in entries]
