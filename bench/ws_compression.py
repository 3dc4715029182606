"""What WebSocket per-message compression costs a screenshot on the host link.

A JPEG barely compresses, but permessage-deflate still runs zlib over every byte on
both ends. This echoes one real screenshot-sized JPEG (noise-like bytes of the size of
a 1080p q85 desktop shot) over loopback with websockets' public API, with compression
negotiated ("deflate") and without (None), and prints the round trip. The host link
and the gateway turn compression off for this reason (docs/protocol.md).

Run: .venv/bin/python -m bench.ws_compression
"""

from __future__ import annotations

import asyncio
import os
import time

from websockets.asyncio.client import connect
from websockets.asyncio.server import ServerConnection, serve

from bench.stats import row

PAYLOAD_BYTES = 487 * 1024
ROUNDS = 60


async def _echo(connection: ServerConnection) -> None:
    async for message in connection:
        await connection.send(message)


async def _round_trips_ms(compression: str | None, payload: bytes) -> list[float]:
    async with serve(_echo, "127.0.0.1", 0, compression=compression, max_size=None) as server:
        port = server.sockets[0].getsockname()[1]
        url = f"ws://127.0.0.1:{port}"
        async with connect(url, compression=compression, max_size=None) as client:
            samples: list[float] = []
            for _ in range(ROUNDS):
                started = time.perf_counter()
                await client.send(payload)
                await client.recv()
                samples.append((time.perf_counter() - started) * 1000.0)
            return samples


async def main() -> None:
    # Random bytes stand in for JPEG entropy-coded data, which deflate cannot shrink.
    payload = os.urandom(PAYLOAD_BYTES)
    print(f"echo of {PAYLOAD_BYTES} bytes over loopback, {ROUNDS} rounds")
    for compression in ("deflate", None):
        samples = await _round_trips_ms(compression, payload)
        print(row(f"compression={compression}", samples))


if __name__ == "__main__":
    asyncio.run(main())
