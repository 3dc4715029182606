"""A peer link that cannot be opened is `PeerUnavailableError`, whatever stands at the
other node's address: the callers answer 503 (a forward) or this node's own view (a
list), never 500."""

from __future__ import annotations

import pytest

from rigway.gateway.cluster.peer_link import ForwardedRequest, PeerClient, PeerUnavailableError
from tests.support.plain_http import plain_http_server

_ASKED = ForwardedRequest(
    method="GET", path="/v1/rigs", query="", headers=[], caller={"account_id": "acc_1"}
)


@pytest.mark.parametrize(("status", "reason"), [(502, "Bad Gateway"), (403, "Forbidden")])
async def test_an_http_answer_instead_of_a_node_is_unavailable(status: int, reason: str) -> None:
    async with plain_http_server(status, reason) as url:
        client = PeerClient(url, "token")
        with pytest.raises(PeerUnavailableError, match=str(status)):
            await client.request(_ASKED, b"", timeout_s=5.0)
        await client.close()


async def test_an_address_with_no_host_is_unavailable() -> None:
    client = PeerClient("http://:8080", "token")

    with pytest.raises(PeerUnavailableError, match="hostname"):
        await client.request(_ASKED, b"", timeout_s=5.0)


async def test_an_address_websockets_cannot_parse_is_unavailable() -> None:
    client = PeerClient("http://127.0.0.1:99999", "token")  # a port past 65535
    with pytest.raises(PeerUnavailableError, match="99999"):
        await client.request(_ASKED, b"", timeout_s=5.0)
