"""Recordings through the whole stack on the sim rig: a session started with
`record: true` keeps every screenshot, observe and input batch, readable as a zip by its
account only, with typed secrets redacted, until the cleaner deletes it."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rigway.gateway.api_keys.schemas import CreateKeyIn
from rigway.gateway.clock import FakeClock
from tests.e2e.harness import QUICK_AGENT, Stack, running_stack

pytestmark = pytest.mark.postgres


@pytest.fixture
async def clocked_stack(
    tmp_path: Path, database_url: str, clock: FakeClock
) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state",
        database_url,
        clock=clock,
        reaper_interval_s=3600,
        agent_settings=QUICK_AGENT,
    ) as running:
        yield running


async def _targets(stack: Stack, session_id: str) -> list[dict[str, Any]]:
    response = await stack.client.get(f"/v1/sessions/{session_id}/targets")
    targets: list[dict[str, Any]] = response.json()["targets"]
    return targets


def _centre(targets: list[dict[str, Any]], name: str) -> tuple[int, int]:
    target = next(t for t in targets if t["name"] == name)
    return target["x"] + target["w"] // 2, target["y"] + target["h"] // 2


async def _recording(stack: Stack, session_id: str) -> zipfile.ZipFile:
    response = await stack.client.get(f"/v1/sessions/{session_id}/recording")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"] == "application/zip"
    return zipfile.ZipFile(io.BytesIO(response.content))


def _steps(archive: zipfile.ZipFile) -> list[dict[str, Any]]:
    lines = archive.read("steps.jsonl").decode().splitlines()
    return [json.loads(line) for line in lines]


async def _record_a_sign_in(stack: Stack, session_id: str) -> None:
    """2 screenshots, 2 observes, 2 input batches (one with its own observe): 7 steps."""
    client = stack.client
    assert (await client.get(f"/v1/sessions/{session_id}/screenshot")).status_code == 200
    observed = await client.get(f"/v1/sessions/{session_id}/observe")
    targets = observed.json()["targets"]
    user_x, user_y = _centre(targets, "Username")
    pass_x, pass_y = _centre(targets, "Password")
    batch = {
        "events": [
            {"type": "mouse_click", "x": user_x, "y": user_y},
            {"type": "type_text", "text": "alice"},
            {"type": "mouse_click", "x": pass_x, "y": pass_y},
            {"type": "type_text", "text": "hunter2-secret"},
        ],
        "observe": {"image": 1},
    }
    assert (await client.post(f"/v1/sessions/{session_id}/input", json=batch)).status_code == 200
    assert (await client.get(f"/v1/sessions/{session_id}/observe?image=0")).status_code == 200
    key = {"events": [{"type": "key_press", "key": "tab"}]}
    assert (await client.post(f"/v1/sessions/{session_id}/input", json=key)).status_code == 200
    assert (await client.get(f"/v1/sessions/{session_id}/screenshot")).status_code == 200


async def test_recorded_session_zip_has_every_step_and_its_frames(stack: Stack) -> None:
    session_id = await stack.start_session(record=True)
    await _record_a_sign_in(stack, session_id)

    archive = await _recording(stack, session_id)
    steps = _steps(archive)

    kinds = [step["kind"] for step in steps]
    assert kinds == ["screenshot", "observe", "input", "observe", "observe", "input", "screenshot"]
    assert [step["seq"] for step in steps] == list(range(1, 8))
    framed = [step for step in steps if step["frame"] is not None]
    assert [step["kind"] for step in framed] == ["screenshot", "observe", "observe", "screenshot"]
    names = archive.namelist()
    assert sorted(n for n in names if n.startswith("frames/")) == [s["frame"] for s in framed]
    assert archive.read(framed[0]["frame"])[:2] == b"\xff\xd8"  # a JPEG
    assert steps[0]["frame_id"] is not None
    assert steps[0]["timing"]["link_ms"] >= 0
    assert any(t["name"] == "Password" for t in steps[1]["targets"])
    click = steps[2]
    assert click["outcome"] == "done"
    assert len(click["receipts"]) == 4
    assert steps[3]["image"] is True
    assert steps[4]["image"] is False


async def test_text_typed_into_a_masked_field_is_redacted(stack: Stack) -> None:
    session_id = await stack.start_session(record=True)
    await _record_a_sign_in(stack, session_id)
    await stack.client.delete(f"/v1/sessions/{session_id}")

    archive = await _recording(stack, session_id)
    events = _steps(archive)[2]["events"]

    assert [e.get("text") for e in events if e["type"] == "type_text"] == ["alice", "[redacted]"]
    everything = b"".join(archive.read(name) for name in archive.namelist())
    assert b"hunter2-secret" not in everything
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["steps"] == 7
    assert manifest["frames"] == 4
    assert manifest["dropped_steps"] == 0
    assert manifest["status"] == "ended"


async def test_stopped_batch_is_recorded_with_its_stop_code(stack: Stack) -> None:
    session_id = await stack.start_session(record=True)
    targets = await _targets(stack, session_id)
    x, y = _centre(targets, "Username")
    batch = {
        "events": [
            {"type": "mouse_move", "x": x, "y": y},
            {"type": "mouse_move", "x": x, "y": y, "expect": "change", "expect_timeout_ms": 50},
        ]
    }
    answer = await stack.client.post(f"/v1/sessions/{session_id}/input", json=batch)
    assert answer.status_code == 409, answer.text

    (step,) = _steps(await _recording(stack, session_id))

    assert step["outcome"] == "stopped"
    assert step["error"]["code"] == "expectation_failed"
    assert step["error"]["status"] == 409
    assert step["error"]["stopped_at"] == 1


async def test_session_without_record_answers_recording_not_found(stack: Stack) -> None:
    session_id = await stack.start_session()
    await stack.client.get(f"/v1/sessions/{session_id}/screenshot")

    response = await stack.client.get(f"/v1/sessions/{session_id}/recording")

    assert response.status_code == 404
    assert response.json()["error"].startswith("recording_not_found: ")
    assert "record: true" in response.json()["error"]


async def test_another_accounts_recording_is_not_found(stack: Stack) -> None:
    session_id = await stack.start_session(record=True)
    other = await stack.services.accounts.create("other account")
    key = await stack.services.keys.create(other, CreateKeyIn(name="other"))

    response = await stack.client.get(
        f"/v1/sessions/{session_id}/recording",
        headers={"Authorization": f"Bearer {key.secret}"},
    )

    assert response.status_code == 404
    assert response.json()["error"] == "session_not_found"


async def test_cleaner_deletes_a_recording_past_its_retention(
    clocked_stack: Stack, clock: FakeClock
) -> None:
    stack = clocked_stack
    session_id = await stack.start_session(record=True)
    await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
    await stack.client.delete(f"/v1/sessions/{session_id}")
    cleaner = stack.services.recording_cleaner
    assert await cleaner.run_once() == 0
    assert (await stack.client.get(f"/v1/sessions/{session_id}/recording")).status_code == 200

    clock.advance(7 * 86400 + 1)
    deleted = await cleaner.run_once()

    assert deleted == 1
    response = await stack.client.get(f"/v1/sessions/{session_id}/recording")
    assert response.status_code == 404
    assert response.json()["error"].startswith("recording_not_found: the recording expired")


async def test_a_key_without_the_sessions_scope_is_refused(stack: Stack) -> None:
    session_id = await stack.start_session(record=True)
    key = await stack.services.keys.create(
        stack.account_id, CreateKeyIn(name="rigs only", scopes=["rigs:read"])
    )

    response = await stack.client.get(
        f"/v1/sessions/{session_id}/recording",
        headers={"Authorization": f"Bearer {key.secret}"},
    )

    assert response.status_code == 403
    assert response.json()["error"].startswith("insufficient_scope")
