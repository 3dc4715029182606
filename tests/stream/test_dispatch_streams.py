"""The dispatcher's stream ops: session checks, refusals, and closing on session end."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from rigway.agent.accessibility import AccessibilityService
from rigway.agent.backends.base import WalkBudget
from rigway.agent.dispatch import Dispatcher, HostOpError
from rigway.agent.safety import InputGuard
from rigway.agent.screen import ScreenService
from rigway.agent.stream import StreamError
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.fakes import FakeApps, FakeDesktop

OFFER = {"viewer_id": "vwr_1", "sdp": "v=0"}


class FakeStreams:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.refuse = False

    async def offer(self, request: ops.StreamOffer) -> ops.StreamAnswer:
        self.calls.append(("offer", request.session_id))
        if self.refuse:
            raise StreamError("the offer has no H.264 video")
        return ops.StreamAnswer(sdp="answer", encoder="libx264", width=320, height=200)

    async def add_candidate(self, request: ops.StreamCandidate) -> None:
        self.calls.append(("candidate", request.candidate))

    async def close(self, session_id: str, viewer_id: str | None = None) -> int:
        self.calls.append(("close", (session_id, viewer_id)))
        return 1

    async def close_all(self) -> None:
        self.calls.append(("close_all", None))


@pytest.fixture
def workers() -> Iterator[list[SerialWorker]]:
    pool = [SerialWorker(f"test-{n}") for n in range(3)]
    yield pool
    for worker in pool:
        worker.shutdown(wait=True)


async def _dispatcher(workers: list[SerialWorker], streams: FakeStreams | None) -> Dispatcher:
    desktop = FakeDesktop()
    return Dispatcher(
        desktop,
        ScreenService(desktop, workers[0]),
        AccessibilityService(desktop, workers[1], WalkBudget()),
        InputGuard(desktop),
        FakeApps(),
        input_executor=workers[2],
        streams=streams,
    )


@pytest.fixture
async def streams() -> FakeStreams:
    return FakeStreams()


@pytest.fixture
async def dispatcher(
    workers: list[SerialWorker], streams: FakeStreams
) -> AsyncIterator[Dispatcher]:
    running = await _dispatcher(workers, streams)
    await running.handle(ops.SESSION_START, {"session_id": "ses_1"})
    yield running
    await running.close()


async def _error(dispatcher: Dispatcher, op: str, body: dict[str, Any]) -> HostOpError:
    with pytest.raises(HostOpError) as caught:
        await dispatcher.handle(op, body)
    return caught.value


async def test_an_offer_is_answered_for_the_running_session_only(
    dispatcher: Dispatcher, streams: FakeStreams
) -> None:
    answer, _ = await dispatcher.handle(ops.STREAM_OFFER, {"session_id": "ses_1", **OFFER})
    assert answer == {"sdp": "answer", "encoder": "libx264", "width": 320, "height": 200}
    other = await _error(dispatcher, ops.STREAM_OFFER, {"session_id": "ses_2", **OFFER})
    assert other.code == ops.ERROR_SESSION_MISMATCH
    streams.refuse = True
    refused = await _error(dispatcher, ops.STREAM_OFFER, {"session_id": "ses_1", **OFFER})
    assert refused.code == ops.ERROR_INVALID_REQUEST
    bad = await _error(dispatcher, ops.STREAM_OFFER, {"session_id": "ses_1", "viewer_id": "x y"})
    assert bad.code == ops.ERROR_INVALID_REQUEST


async def test_the_session_end_closes_its_streams_and_close_stays_idempotent(
    dispatcher: Dispatcher, streams: FakeStreams
) -> None:
    await dispatcher.handle(ops.STREAM_OFFER, {"session_id": "ses_1", **OFFER})
    await dispatcher.handle(
        ops.STREAM_CANDIDATE, {"session_id": "ses_1", "viewer_id": "vwr_1", "candidate": None}
    )
    await dispatcher.handle(ops.SESSION_END, {"session_id": "ses_1", "reason": "client"})
    assert ("close", ("ses_1", None)) in streams.calls
    reply, _ = await dispatcher.handle(
        ops.STREAM_CLOSE, {"session_id": "ses_1", "viewer_id": "vwr_1"}
    )
    assert reply == {"closed": 1}
    late = await _error(
        dispatcher, ops.STREAM_CANDIDATE, {"session_id": "ses_1", "viewer_id": "vwr_1"}
    )
    assert late.code == ops.ERROR_SESSION_MISMATCH


async def test_without_the_stream_extra_the_ops_say_so(
    workers: list[SerialWorker],
) -> None:
    dispatcher = await _dispatcher(workers, None)
    try:
        await dispatcher.handle(ops.SESSION_START, {"session_id": "ses_1"})
        error = await _error(dispatcher, ops.STREAM_OFFER, {"session_id": "ses_1", **OFFER})
        assert error.code == ops.ERROR_HOST
        assert "not installed" in error.detail
        reply, _ = await dispatcher.handle(ops.STREAM_CLOSE, {"session_id": "ses_1"})
        assert reply == {"closed": 0}
    finally:
        await dispatcher.close()
