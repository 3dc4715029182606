"""The caller a peer link names on a forwarded request: an API key's principal or a
console user, each only ever read as what it is (a console user never passes for an
API key, nor an API key for a signed-in console user), and nothing on a request that
did not come over a peer link."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from rigway.gateway.cluster.forwarding import (
    ConsoleUser,
    forwarded_caller,
    forwarded_console_user,
)
from rigway.gateway.cluster.peer_link import FORWARDED_EXTENSION

API_CALLER = {
    "account_id": "acc_1",
    "key_id": "key_1",
    "environment": "live",
    "scopes": ["sessions", "input"],
}
CONSOLE_CALLER = {"kind": "console", "account_id": "acc_1", "subject": "usr_1", "token": "jwt"}


def _request(caller: dict[str, Any] | None) -> Request:
    extensions = {} if caller is None else {FORWARDED_EXTENSION: caller}
    return Request({"type": "http", "headers": [], "extensions": extensions})


def test_an_api_caller_is_read_as_one_and_never_as_a_console_user() -> None:
    request = _request(API_CALLER)

    principal = forwarded_caller(request)

    assert principal is not None
    assert (principal.account_id, principal.key_id) == ("acc_1", "key_1")
    assert principal.scopes == frozenset({"sessions", "input"})
    assert forwarded_console_user(request) is None


def test_a_console_user_is_read_as_one_and_never_as_an_api_caller() -> None:
    request = _request(CONSOLE_CALLER)

    assert forwarded_console_user(request) == ConsoleUser("acc_1", "usr_1", "jwt")
    assert forwarded_caller(request) is None


def test_a_caller_of_an_unknown_kind_is_neither() -> None:
    request = _request({**API_CALLER, "kind": "something newer"})

    assert forwarded_caller(request) is None
    assert forwarded_console_user(request) is None


def test_a_request_that_came_directly_names_no_forwarded_caller() -> None:
    request = _request(None)

    assert forwarded_caller(request) is None
    assert forwarded_console_user(request) is None
