"""The recording pages of the console over real HTTP: the replay page, its steps and
frames, the zip, the Replay link on History only for recorded sessions, another
account's recording and a session that did not record; and the API's archive read with
the owner's console token."""

from __future__ import annotations

import io
import zipfile

import httpx2
import pytest

from tests.e2e.harness import Stack
from tests.gateway.console.pages import INTRUDER, ConsolePages, add_owner

pytestmark = pytest.mark.postgres


async def _recorded(stack: Stack, *, shots: int = 1) -> str:
    session_id = await stack.start_session(record=True)
    for _ in range(shots):
        assert (await stack.client.get(f"/v1/sessions/{session_id}/screenshot")).status_code == 200
    return session_id


async def test_the_replay_page_its_steps_frames_and_zip(stack: Stack, owner: ConsolePages) -> None:
    session_id = await _recorded(stack, shots=2)
    base = f"/console/sessions/{session_id}/recording"

    page = await owner.client.get(base)
    steps = await owner.client.get(f"{base}/steps.json")
    frame = await owner.client.get(f"{base}/frames/2.jpg")
    archive = await owner.client.get(f"/console/sessions/{session_id}/recording.zip")

    assert page.status_code == 200
    assert "Step 1 of 2" in page.text
    assert "recording_replay.js" in page.text
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert [s["seq"] for s in steps.json()["steps"]] == [1, 2]
    assert frame.headers["content-type"] == "image/jpeg"
    assert frame.content[:2] == b"\xff\xd8"
    assert archive.headers["content-type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(archive.content)).namelist()
    assert names == ["steps.jsonl", "frames/000001.jpg", "frames/000002.jpg", "manifest.json"]


async def test_a_recording_with_no_step_yet_says_so(stack: Stack, owner: ConsolePages) -> None:
    session_id = await stack.start_session(record=True)

    page = await owner.client.get(f"/console/sessions/{session_id}/recording")

    assert page.status_code == 200
    assert "Nothing recorded yet" in page.text


async def test_a_step_without_a_frame_is_a_404_page(stack: Stack, owner: ConsolePages) -> None:
    session_id = await _recorded(stack)

    missing = await owner.client.get(f"/console/sessions/{session_id}/recording/frames/9.jpg")

    assert missing.status_code == 404


async def test_history_and_the_session_page_link_replay_only_when_recorded(
    stack: Stack, owner: ConsolePages
) -> None:
    recorded = await _recorded(stack)
    await stack.client.delete(f"/v1/sessions/{recorded}")
    plain = await stack.start_session()
    await stack.client.delete(f"/v1/sessions/{plain}")

    history = (await owner.client.get("/console/history")).text
    recorded_page = (await owner.client.get(f"/console/sessions/{recorded}")).text
    plain_page = (await owner.client.get(f"/console/sessions/{plain}")).text

    assert f'href="/console/sessions/{recorded}/recording"' in history
    assert f'href="/console/sessions/{plain}/recording"' not in history
    assert f'href="/console/sessions/{recorded}/recording"' in recorded_page
    assert "/recording" not in plain_page


async def test_a_session_that_did_not_record_is_a_404_page(
    stack: Stack, owner: ConsolePages
) -> None:
    session_id = await stack.start_session()

    page = await owner.client.get(f"/console/sessions/{session_id}/recording")

    assert page.status_code == 404
    assert "<html" in page.text


async def test_another_accounts_recording_is_a_404_page(stack: Stack) -> None:
    session_id = await _recorded(stack)
    other = await stack.services.accounts.create("other account")
    await add_owner(stack, INTRUDER, other)
    async with ConsolePages(stack) as intruder:
        await intruder.signed_in(INTRUDER)
        base = f"/console/sessions/{session_id}/recording"
        answers = [
            await intruder.client.get(base),
            await intruder.client.get(f"{base}/steps.json"),
            await intruder.client.get(f"{base}/frames/1.jpg"),
            await intruder.client.get(f"/console/sessions/{session_id}/recording.zip"),
        ]

    assert [answer.status_code for answer in answers] == [404, 404, 404, 404]


async def test_the_owners_console_token_reads_the_archive(stack: Stack) -> None:
    session_id = await _recorded(stack)
    identity = stack.services.identity
    assert identity is not None
    token = identity.issue("usr_test", stack.account_id)

    async with httpx2.AsyncClient(base_url=stack.base_url, trust_env=False) as client:
        answer = await client.get(
            f"/v1/sessions/{session_id}/recording", headers={"Authorization": f"Bearer {token}"}
        )

    assert answer.status_code == 200
    assert "steps.jsonl" in zipfile.ZipFile(io.BytesIO(answer.content)).namelist()
