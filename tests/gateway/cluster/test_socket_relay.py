"""A signaling socket that cannot be relayed to the holder: the viewer is closed 1013
`unavailable`, and the log names the node and the kind of failure, never the URL the
relay dialled (its query is the viewer's token, unused and still good)."""

from __future__ import annotations

import logging
import socket

import pytest
from starlette.datastructures import URL

from rigway.gateway.cluster.socket_relay import relay_socket

SECRET = b"bXktc2hhcmVkLXNlY3JldC1rZXktb2YtdGhpcnR5LXR3bz0="
TOKEN = "eyJhbGciOiJIUzI1NiJ9.a-viewer-token.signature"


class ViewerSocket:
    """The accepted socket of a viewer, as far as a relay that fails to dial needs it."""

    def __init__(self, url: str) -> None:
        self.url = URL(url)
        self.closed_with: tuple[int, str] | None = None

    async def close(self, code: int = 1000, reason: str | None = None) -> None:
        self.closed_with = (code, reason or "")


@pytest.mark.parametrize(
    "node_url",
    [
        "10.0.0.5:8080",  # no scheme: the relay's URL has no host (websockets' InvalidURI)
        "gw-b:8080",
    ],
)
async def test_a_holder_url_without_a_host_closes_unavailable_and_logs_no_token(
    node_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    viewer = ViewerSocket(f"ws://edge.example/v1/stream/signal?token={TOKEN}")

    with caplog.at_level(logging.DEBUG):
        await relay_socket(viewer, node_url, SECRET)  # type: ignore[arg-type]

    assert viewer.closed_with == (1013, "unavailable")
    assert TOKEN not in caplog.text
    warning = next(r for r in caplog.records if r.name.endswith("socket_relay"))
    assert warning.getMessage() == (f"could not relay a signaling socket to {node_url}: InvalidURI")


async def test_a_holder_that_refuses_the_connection_is_named_with_the_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    viewer = ViewerSocket(f"ws://edge.example/v1/stream/signal?token={TOKEN}")
    # A port bound but not listening: a connection to it is refused at once.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        node_url = f"http://127.0.0.1:{taken.getsockname()[1]}"

        with caplog.at_level(logging.DEBUG):
            await relay_socket(viewer, node_url, SECRET)  # type: ignore[arg-type]

    assert viewer.closed_with == (1013, "unavailable")
    assert TOKEN not in caplog.text
    assert f"could not relay a signaling socket to {node_url}: " in caplog.text
