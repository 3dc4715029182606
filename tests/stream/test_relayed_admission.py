"""Admission of a signaling socket another node relayed here: a session that is not
live here because its rig moved on to a third node is refused `unavailable` with the
link unused (the viewer's retry is relayed to the new holder), while a session that
ended here is refused `session_ended`, the link used."""

from __future__ import annotations

import pytest

from rigway.gateway.clock import FakeClock
from rigway.gateway.sessions.live import LiveSession, LiveSessions
from rigway.gateway.stream.service import Refused, RelayToHolder, redeem_token
from rigway.gateway.stream.tokens import TokenRejectedError, ViewerTokens

THIRD_NODE = "http://10.0.0.3:8080"


class Holders:
    """Which other node holds each rig, as the rig leases say."""

    def __init__(self) -> None:
        self.elsewhere: dict[str, str] = {}

    async def holder_url_of(self, rig_id: str) -> str | None:
        return self.elsewhere.get(rig_id)


def _live(clock: FakeClock, session_id: str, rig_id: str) -> LiveSession:
    return LiveSession(
        id=session_id,
        account_id="acc_1",
        rig_id=rig_id,
        api_key_id=None,
        mode="desktop",
        idle_timeout_s=300,
        started_at=clock.now(),
        last_activity_at=clock.now(),
        action_count=0,
        native_width=1920,
        native_height=1080,
        capture_mode=None,
    )


async def test_a_relayed_socket_whose_rig_moved_on_is_unavailable_and_keeps_its_link() -> None:
    clock, live, holders = FakeClock(), LiveSessions(), Holders()
    tokens = ViewerTokens(clock.now)
    token = tokens.issue("ses_1", "rig_1").token
    holders.elsewhere["rig_1"] = THIRD_NODE  # the rig moved again while the relay connected

    with pytest.raises(Refused) as refused:
        await redeem_token(
            tokens, live, token, None, holder_url_of=holders.holder_url_of, relayed=True
        )
    assert (refused.value.code, refused.value.reason) == (1013, "unavailable")

    # The link is still good: here once the session is live here (the rig came back) ...
    live.add(_live(clock, "ses_1", "rig_1"))
    admitted = await redeem_token(
        tokens, live, token, None, holder_url_of=holders.holder_url_of, relayed=True
    )
    assert admitted.id == "ses_1"
    # ... and only once.
    with pytest.raises(Refused) as again:
        await redeem_token(
            tokens, live, token, None, holder_url_of=holders.holder_url_of, relayed=True
        )
    assert again.value.reason == "token_used"


async def test_a_relayed_socket_of_a_session_ended_here_uses_its_link() -> None:
    clock, live, holders = FakeClock(), LiveSessions(), Holders()
    tokens = ViewerTokens(clock.now)
    token = tokens.issue("ses_1", "rig_1").token  # no other node holds rig_1: it ended here

    with pytest.raises(Refused) as refused:
        await redeem_token(
            tokens, live, token, None, holder_url_of=holders.holder_url_of, relayed=True
        )
    assert (refused.value.code, refused.value.reason) == (4410, "session_ended")
    with pytest.raises(TokenRejectedError) as used:
        await tokens.use_once(token)
    assert used.value.reason == "token_used"


async def test_a_socket_not_relayed_yet_goes_to_the_holder_with_its_link_unused() -> None:
    clock, live, holders = FakeClock(), LiveSessions(), Holders()
    tokens = ViewerTokens(clock.now)
    token = tokens.issue("ses_1", "rig_1").token
    holders.elsewhere["rig_1"] = THIRD_NODE

    with pytest.raises(RelayToHolder) as relayed:
        await redeem_token(tokens, live, token, None, holder_url_of=holders.holder_url_of)
    assert relayed.value.node_url == THIRD_NODE
    assert (await tokens.use_once(token)).session_id == "ses_1"
