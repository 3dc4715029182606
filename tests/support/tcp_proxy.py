"""A TCP proxy a test can cut and restore: a store or Redis that goes away and comes
back on the same address, with the real client library's real errors in between."""

from __future__ import annotations

import asyncio
import contextlib


class CuttableProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._pipes: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self) -> None:
        """Listen (on the same port as before, after a cut)."""
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        """Stop listening and drop every connection: the service is unreachable."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.transport.abort()
        for pipe in list(self._pipes):
            pipe.cancel()
        await asyncio.gather(*self._pipes, return_exceptions=True)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            return
        self._writers |= {writer, upstream_writer}
        for source, sink in ((reader, upstream_writer), (upstream_reader, writer)):
            pipe = asyncio.create_task(_pipe(source, sink))
            self._pipes.add(pipe)
            pipe.add_done_callback(self._pipes.discard)


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    except (ConnectionError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(Exception):
            sink.close()
