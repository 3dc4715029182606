"""A read that gathers what several nodes know asks them all at once, waits for all of
them together at most its timeout, and keeps what answered 200."""

from __future__ import annotations

import asyncio

import pytest

from rigway.gateway.cluster.fan_out import first_answers
from rigway.gateway.cluster.peer_link import (
    ForwardedResponse,
    PeerTimeoutError,
    PeerUnavailableError,
)
from rigway.gateway.errors import ServiceUnavailable


def _answer(status: int, body: bytes) -> ForwardedResponse:
    return ForwardedResponse(status=status, headers=[], body=memoryview(body))


async def _answers(status: int, body: bytes) -> ForwardedResponse:
    return _answer(status, body)


async def _fails(failure: Exception) -> ForwardedResponse:
    raise failure


async def test_the_nodes_are_asked_together() -> None:
    """Each node answers only once the other has been asked: asked one after another,
    the first would wait for ever."""
    asked_a, asked_b = asyncio.Event(), asyncio.Event()

    async def node(asked: asyncio.Event, other: asyncio.Event, body: bytes) -> ForwardedResponse:
        asked.set()
        await other.wait()
        return _answer(200, body)

    answers = await first_answers(
        {"http://a": node(asked_a, asked_b, b"a"), "http://b": node(asked_b, asked_a, b"b")},
        timeout_s=30.0,
    )

    assert answers == {"http://a": b"a", "http://b": b"b"}


async def test_what_did_not_answer_200_is_left_out() -> None:
    answers = await first_answers(
        {
            "http://ok": _answers(200, b"listed"),
            "http://proxy": _answers(502, b"bad gateway"),
            "http://gone": _fails(PeerUnavailableError("refused")),
            "http://slow": _fails(PeerTimeoutError("no answer")),
            "http://nobody": _fails(ServiceUnavailable("no caller")),
        },
        timeout_s=30.0,
    )

    assert answers == {"http://ok": b"listed"}


async def test_one_timeout_for_all_and_the_late_ones_are_cancelled() -> None:
    never = asyncio.Event()
    cancelled: list[str] = []

    async def hangs(name: str) -> ForwardedResponse:
        try:
            await never.wait()
        except asyncio.CancelledError:
            cancelled.append(name)
            raise
        raise AssertionError("unreachable")

    answers = await first_answers(
        {"http://a": hangs("a"), "http://b": hangs("b"), "http://ok": _answers(200, b"x")},
        timeout_s=0.01,
    )

    assert answers == {"http://ok": b"x"}
    assert sorted(cancelled) == ["a", "b"]


async def test_an_unexpected_failure_is_not_hidden() -> None:
    with pytest.raises(KeyError):
        await first_answers({"http://a": _fails(KeyError("bug"))}, timeout_s=30.0)


async def test_no_nodes_no_answers() -> None:
    assert await first_answers({}, timeout_s=30.0) == {}
