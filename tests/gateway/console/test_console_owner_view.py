"""The owner's first look over real HTTP: one session's live page (linked from the
sessions table and the rig card, with kill and a way back), ended sessions with how
they ended and the key that ran them, paged, usage per month, the live values the
pages poll, key scopes, and the words every page uses for the API's codes."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import get_args

import pytest

from rigway.gateway.api_keys.schemas import Scope
from rigway.gateway.clock import FakeClock
from rigway.gateway.console.history import ENDED_SESSIONS_PAGE_SIZE
from rigway.gateway.console.wording import END_REASON_WORDS, SCOPE_WORDS, SESSION_STATUS_WORDS
from rigway.gateway.db.models import Session
from rigway.gateway.ids import new_id
from rigway.gateway.sessions.schemas import EndReason, SessionStatus
from tests.e2e.harness import QUICK_AGENT, Stack, running_stack
from tests.gateway.console.pages import OWNER, ConsolePages, add_owner
from tests.support.log_records import log_records

pytestmark = pytest.mark.postgres


async def _add_ended_session(
    stack: Stack, *, started_at: datetime, seconds: float, status: str = "ended"
) -> str:
    """An ended session written straight to the store, as the sessions feature leaves one."""
    session_id = new_id("ses")
    async with stack.services.db.begin() as db:
        db.add(
            Session(
                id=session_id,
                account_id=stack.account_id,
                rig_id=stack.rig_ids[0],
                api_key_id=None,
                mode="desktop",
                status=status,
                started_at=started_at,
                ended_at=started_at + timedelta(seconds=seconds),
                ended_reason="idle_timeout" if status == "ended" else None,
                idle_timeout_s=300,
                last_activity_at=started_at,
                action_count=0,
            )
        )
    return session_id


def _rows(page_text: str, table_id: str) -> list[str]:
    body = page_text.split(f'id="{table_id}"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr id=\"[^\"]+\">(.*?)</tr>", body, flags=re.DOTALL)


# ---- one session's page ----


async def test_live_session_is_linked_from_the_table_and_the_rig_card(
    stack: Stack, owner: ConsolePages
) -> None:
    session_id = await stack.start_session()
    link = f'href="/console/sessions/{session_id}"'
    assert link in (await owner.client.get("/console/sessions")).text
    assert link in (await owner.client.get("/console/rigs")).text


async def test_session_page_shows_the_screen_a_kill_button_and_the_way_back(
    stack: Stack, owner: ConsolePages
) -> None:
    session_id = await stack.start_session()
    page = await owner.client.get(f"/console/sessions/{session_id}")
    assert page.status_code == 200
    assert f'action="/console/sessions/{session_id}/kill"' in page.text
    assert 'href="/console/sessions"' in page.text
    assert f'src="/console/rigs/{stack.rig_ids[0]}/screenshot"' in page.text
    assert f'href="/console/stream/{session_id}"' in page.text
    assert ">live<" in page.text


async def test_kill_from_the_session_page_ends_it_in_words(
    stack: Stack, owner: ConsolePages
) -> None:
    session_id = await stack.start_session()
    killed = await owner.post(f"/console/sessions/{session_id}/kill")
    assert killed.status_code == 303
    notice = await owner.client.get(killed.headers["location"])
    assert "ended by the owner" in notice.text
    page = await owner.client.get(f"/console/sessions/{session_id}")
    assert page.status_code == 200
    assert "ended by the owner" in page.text
    assert "owner_kill" not in page.text
    assert f"/console/sessions/{session_id}/kill" not in page.text  # nothing left to kill


async def test_another_accounts_session_page_is_not_found(
    stack: Stack, owner: ConsolePages, intruder: ConsolePages
) -> None:
    session_id = await stack.start_session()
    page = await intruder.client.get(f"/console/sessions/{session_id}")
    values = (await intruder.client.get(f"/console/live.json?session={session_id}")).json()
    assert page.status_code == 404
    assert session_id not in page.text
    assert not any(session_id in key for key in values)


# ---- history and usage ----


async def test_ended_session_lists_how_it_ended_its_minutes_and_its_key(
    stack: Stack, owner: ConsolePages
) -> None:
    session_id = await stack.start_session()
    assert (await stack.client.delete(f"/v1/sessions/{session_id}")).status_code == 200
    key = next(k for k in await stack.services.keys.list(stack.account_id) if k.name == "e2e")
    page = await owner.client.get("/console/history")
    assert page.status_code == 200
    [row] = _rows(page.text, "ended-sessions")
    assert session_id in row
    assert "ended by the agent" in row
    assert f"e2e ({key.key_prefix}…)" in row
    assert '<td class="num">1</td>' in row  # any session bills at least a minute
    assert re.search(r"<td>\d+ s</td>", row) is not None  # its duration


async def test_ended_sessions_are_paged_newest_first(stack: Stack, owner: ConsolePages) -> None:
    start = stack.services.clock.now() - timedelta(days=1)
    ids = [
        await _add_ended_session(stack, started_at=start + timedelta(minutes=index), seconds=30)
        for index in range(ENDED_SESSIONS_PAGE_SIZE + 1)
    ]
    first = await owner.client.get("/console/history")
    second = await owner.client.get("/console/history?page=2")
    first_rows = _rows(first.text, "ended-sessions")
    assert len(first_rows) == ENDED_SESSIONS_PAGE_SIZE
    assert ids[-1] in first_rows[0]
    assert 'href="/console/history?page=2"' in first.text
    [last] = _rows(second.text, "ended-sessions")
    assert ids[0] in last
    assert 'href="/console/history?page=1"' in second.text
    assert "?page=3" not in second.text


async def test_a_page_number_below_one_is_a_clear_400(owner: ConsolePages) -> None:
    page = await owner.client.get("/console/history?page=0")
    assert page.status_code == 400
    assert "page" in page.text


async def test_usage_sums_billed_minutes_per_calendar_month(
    stack: Stack, owner: ConsolePages
) -> None:
    now = stack.services.clock.now()
    this_month = datetime(now.year, now.month, 1, tzinfo=UTC)
    last_month = (this_month - timedelta(days=1)).replace(day=1)
    await _add_ended_session(stack, started_at=this_month, seconds=90)  # 2 minutes
    await _add_ended_session(stack, started_at=this_month, seconds=60)  # 1 minute
    await _add_ended_session(stack, started_at=last_month, seconds=600)  # 10 minutes
    await _add_ended_session(stack, started_at=last_month, seconds=600, status="failed")
    page = await owner.client.get("/console/history")
    rows = _rows(page.text, "usage")
    assert [re.findall(r"<td[^>]*>([^<]*)</td>", row) for row in rows] == [
        [this_month.strftime("%Y-%m"), "3", "2"],
        [last_month.strftime("%Y-%m"), "10", "2"],
    ]


# ---- live values ----


async def test_live_json_needs_a_signed_in_owner(stack: Stack) -> None:
    async with ConsolePages(stack) as anonymous:
        answer = await anonymous.client.get("/console/live.json")
    assert (answer.status_code, answer.headers["location"]) == (303, "/console/sign-in")


async def test_live_json_carries_what_the_pages_show(stack: Stack, owner: ConsolePages) -> None:
    rig_id = stack.rig_ids[0]
    session_id = await stack.start_session()
    move = {"events": [{"type": "mouse_move", "x": 5, "y": 5}]}
    moved = await stack.client.post(f"/v1/sessions/{session_id}/input", json=move)
    assert moved.status_code == 200
    values = (await owner.client.get("/console/live.json")).json()
    assert values[f"rig:{rig_id}:state"] == "online"
    assert values[f"rig:{rig_id}:session"] == "in session"
    assert values[f"session:{session_id}:status"] == "live"
    assert values[f"session:{session_id}:actions"] == "1"
    assert values[f"session:{session_id}:billed_minutes"] == "1"
    rigs_page = (await owner.client.get("/console/rigs")).text
    sessions_page = (await owner.client.get("/console/sessions")).text
    assert f'data-live="rig:{rig_id}:last_seen"' in rigs_page
    assert f'data-live="session:{session_id}:billed_minutes"' in sessions_page


async def test_live_json_says_how_a_watched_session_ended(
    stack: Stack, owner: ConsolePages
) -> None:
    session_id = await stack.start_session()
    await owner.post(f"/console/sessions/{session_id}/kill")
    watched = {"session": [session_id, "ses_no_such_session"]}
    values = (await owner.client.get("/console/live.json", params=watched)).json()
    assert values[f"session:{session_id}:status"] == "ended by the owner"
    assert values[f"rig:{stack.rig_ids[0]}:session"] == ""
    assert not any("ses_no_such_session" in key for key in values)


async def test_pages_may_fetch_their_live_values(owner: ConsolePages) -> None:
    page = await owner.client.get("/console/rigs")
    assert "connect-src 'self'" in page.headers["content-security-policy"]
    script = await owner.client.get("/console/static/console.js")
    assert "/console/live.json" in script.text


async def test_last_seen_moves_while_a_rig_is_online_and_stops_when_it_goes(
    tmp_path: Path, database_url: str
) -> None:
    clock = FakeClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
    async with running_stack(
        tmp_path / "state",
        database_url,
        clock=clock,
        reaper_interval_s=3600,
        agent_settings=QUICK_AGENT,
    ) as stack:
        await add_owner(stack, OWNER)
        rig_id = stack.rig_ids[0]
        key = f"rig:{rig_id}:last_seen"
        async with ConsolePages(stack) as owner:
            await owner.signed_in(OWNER)
            first = (await owner.client.get("/console/live.json")).json()[key]
            clock.advance(65)
            moved = (await owner.client.get("/console/live.json")).json()[key]
            with log_records("rigway.gateway.hostlink.routes") as records:
                await stack.stop_agent(rig_id)
                # The route says so once it has written the time the link closed.
                await records.wait_for(f"host {rig_id} disconnected")
            clock.advance(65)
            offline = (await owner.client.get("/console/live.json")).json()
    assert (first, moved) == ("2026-03-01 12:00:00 UTC", "2026-03-01 12:01:05 UTC")
    assert offline[f"rig:{rig_id}:state"] == "offline"
    assert offline[key] == "2026-03-01 12:01:05 UTC"  # when its link closed, then still


# ---- key scopes ----


async def test_a_key_gets_the_scopes_ticked_and_the_table_shows_them(
    stack: Stack, owner: ConsolePages
) -> None:
    created = await owner.post("/console/keys", name="reader", scopes=["rigs:read", "stream"])
    assert created.status_code == 201
    assert "rigs:read, stream" in created.text
    [key] = [k for k in await stack.services.keys.list(stack.account_id) if k.name == "reader"]
    assert sorted(key.scopes) == ["rigs:read", "stream"]
    row = (await owner.client.get("/console/keys")).text.split(f'id="key-{key.id}"')[1]
    row = row.split("</tr>")[0]
    assert ">rigs:read</code>" in row
    assert ">stream</code>" in row
    assert ">sessions</code>" not in row


async def test_a_key_with_no_scope_ticked_is_refused(stack: Stack, owner: ConsolePages) -> None:
    refused = await owner.post("/console/keys", name="nothing")
    assert refused.status_code == 400
    assert "scopes" in refused.text
    assert not [k for k in await stack.services.keys.list(stack.account_id) if k.name == "nothing"]


async def test_the_key_form_offers_every_scope_ticked(owner: ConsolePages) -> None:
    form = (await owner.client.get("/console/keys")).text
    offered = re.findall(r'name="scopes" value="([^"]+)" checked', form)
    assert offered == list(SCOPE_WORDS)


# ---- words ----


def test_every_code_the_api_speaks_has_words() -> None:
    assert set(get_args(EndReason)) == set(END_REASON_WORDS)
    assert set(get_args(SessionStatus)) == set(SESSION_STATUS_WORDS)
    assert set(get_args(Scope)) == set(SCOPE_WORDS)
