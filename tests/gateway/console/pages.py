"""A console user driven with plain HTTP: sign in through the form, read each page's
CSRF token, post forms. Redirects are not followed, so tests see every 303."""

from __future__ import annotations

import html
import re
from types import TracebackType
from typing import Self

import httpx2

from tests.e2e.harness import Stack

_CSRF = re.compile(r'name="csrf_token" value="([^"]*)"')
PASSWORD = "correct horse battery"
# The console users the `owner` and `intruder` fixtures (conftest.py) sign in.
OWNER = "owner@example.com"
INTRUDER = "intruder@example.com"


def csrf_of(page: httpx2.Response) -> str:
    found = _CSRF.search(page.text)
    assert found is not None, f"no CSRF token on {page.url}"
    return html.unescape(found.group(1))


async def add_owner(stack: Stack, email: str, account_id: str | None = None) -> None:
    identity = stack.services.identity
    assert identity is not None
    await identity.create_user(account_id or stack.account_id, email, PASSWORD)


class ConsolePages:
    def __init__(self, stack: Stack) -> None:
        self.client = httpx2.AsyncClient(
            base_url=stack.base_url, trust_env=False, follow_redirects=False, timeout=30.0
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.client.aclose()

    async def sign_in(self, email: str, password: str = PASSWORD) -> httpx2.Response:
        form = await self.client.get("/console/sign-in")
        fields = {"csrf_token": csrf_of(form), "email": email, "password": password}
        return await self.client.post("/console/sign-in", data=fields)

    async def signed_in(self, email: str) -> Self:
        answer = await self.sign_in(email)
        assert answer.status_code == 303, answer.text
        return self

    async def csrf(self) -> str:
        return csrf_of(await self.client.get("/console/rigs"))

    async def post(self, path: str, **fields: str | list[str]) -> httpx2.Response:
        """A form post carrying this session's CSRF token."""
        return await self.client.post(path, data={"csrf_token": await self.csrf(), **fields})
