"""A resolver the test controls: fixed answers per name, changeable between calls."""

from __future__ import annotations

import socket


class FakeResolver:
    def __init__(self, answers: dict[str, list[str]] | None = None) -> None:
        self.answers: dict[str, list[str]] = dict(answers or {})
        self.calls: list[str] = []

    async def resolve(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host not in self.answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(self.answers[host])
