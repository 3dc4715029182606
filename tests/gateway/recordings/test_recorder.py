"""The recorder and the recordings service on a real store, with a fake clock: steps in
order, the caps, redaction from the targets last seen, a recording that goes on on
another node, the archive, retention and the cleaner."""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest
from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker

from rigway.gateway.clock import FakeClock
from rigway.gateway.db.engine import apply_migrations, create_engine, session_factory
from rigway.gateway.db.models import Account, Rig, Session
from rigway.gateway.desktop.schemas import ObserveOut
from rigway.gateway.desktop.service import ScreenParams, Screenshot
from rigway.gateway.errors import NotFound, input_stopped
from rigway.gateway.hostlink.registry import HostRegistry
from rigway.gateway.recordings import repository
from rigway.gateway.recordings.recorder import Recorder
from rigway.gateway.recordings.service import RecordingService
from rigway.gateway.recordings.tasks import RecordingCleaner
from rigway.gateway.sessions.live import LiveSession
from rigway.gateway.sessions.service import SessionService
from rigway.gateway.settings import GatewaySettings
from rigway.protocol import ops

pytestmark = pytest.mark.postgres

START = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
JPEG = b"\xff\xd8" + bytes(998) + b"\xff\xd9"  # 1000 bytes
DAY_S = 86400


@dataclass
class Store:
    db: async_sessionmaker[DbSession]
    clock: FakeClock
    settings: GatewaySettings

    def recorder(self, **caps: int) -> Recorder:
        limits = {"max_bytes": 10_000_000, "max_steps": 1000} | caps
        return Recorder(self.db, self.clock, **limits)

    def service(self, recorder: Recorder) -> RecordingService:
        sessions = SessionService(self.db, HostRegistry(), self.clock, self.settings)
        return RecordingService(self.db, self.clock, self.settings, sessions, recorder)


@pytest.fixture
async def store(tmp_path: Path, database_url: str) -> AsyncIterator[Store]:
    engine = create_engine(database_url)
    await apply_migrations(engine)
    db = session_factory(engine)
    async with db.begin() as transaction:
        transaction.add(Account(id="acc_1", name="one", created_at=START))
        transaction.add(Account(id="acc_2", name="two", created_at=START))
    settings = GatewaySettings(state_dir=tmp_path / "state", database_url=database_url)
    try:
        yield Store(db, FakeClock(START), settings)
    finally:
        await engine.dispose()


async def _session(store: Store, session_id: str, *, record: bool = True) -> LiveSession:
    """An active session on a rig of its own (one active session per rig)."""
    rig_id = f"rig_{session_id}"
    async with store.db.begin() as db:
        db.add(Rig(id=rig_id, account_id="acc_1", name="rig", created_at=START))
        await db.flush()
        db.add(
            Session(
                id=session_id, account_id="acc_1", rig_id=rig_id, mode="desktop",
                status="active", started_at=START, idle_timeout_s=900,
                last_activity_at=START, action_count=0, record=record,
            )
        )  # fmt: skip
    return LiveSession(
        id=session_id, account_id="acc_1", rig_id=rig_id, api_key_id=None, mode="desktop",
        idle_timeout_s=900, started_at=START, last_activity_at=START, action_count=0,
        native_width=1920, native_height=1080, capture_mode=None, record=record,
    )  # fmt: skip


async def _end(store: Store, session_id: str) -> None:
    async with store.db.begin() as db:
        row = await db.get(Session, session_id)
        assert row is not None
        row.status, row.ended_at, row.ended_reason = "ended", store.clock.now(), "client"


def _shot(jpeg: bytes = JPEG) -> Screenshot:
    reply = ops.ScreenCaptured(
        width=1280, height=720, native_width=1920, native_height=1080,
        host_jpeg_ms=4.0, cached=False, marked=False,
    )  # fmt: skip
    return Screenshot(memoryview(jpeg), reply, 2.5)


def _observe(targets: list[dict[str, Any]]) -> ObserveOut:
    example = dict(ObserveOut.model_json_schema()["examples"][0])
    example["targets"] = [
        {"x": 0, "y": 0, "w": 10, "h": 10, "role": "text", "source": "uia", "value": None} | t
        for t in targets
    ]
    return ObserveOut.model_validate(example)


def _done(*receipts: tuple[str, float]) -> ops.InputDone:
    return ops.InputDone(
        count=len(receipts),
        events=[
            ops.EventReceipt(index=i, type=kind, ok=True, at_ms=at, changed=True)
            for i, (kind, at) in enumerate(receipts)
        ],
    )


TYPE_SECRET = {"events": [{"type": "type_text", "text": "s3cret"}]}


async def test_steps_are_kept_in_order_with_their_frames_and_timings(store: Store) -> None:
    live = await _session(store, "ses_1")
    recorder = store.recorder()
    await recorder.screenshot(live, ScreenParams(quality=70), _shot())
    store.clock.advance(1.5)
    await recorder.input(live, TYPE_SECRET, _done(("type_text", 3.0)))

    steps = await store.service(recorder).steps("acc_1", "ses_1")

    assert [(s["seq"], s["kind"]) for s in steps] == [(1, "screenshot"), (2, "input")]
    assert steps[0]["frame"] == "frames/000001.jpg"
    assert steps[0]["quality"] == 70
    assert steps[0]["timing"] == {"link_ms": 2.5, "host_jpeg_ms": 4.0, "cached": False}
    assert steps[1]["frame"] is None
    assert steps[1]["t_ms"] == 1500
    assert steps[1]["outcome"] == "done"
    assert steps[1]["timing"] == {"batch_ms": 3}


async def test_text_typed_after_an_observe_with_a_focused_masked_field_is_redacted(
    store: Store,
) -> None:
    live = await _session(store, "ses_1")
    recorder = store.recorder()
    masked = {"id": "t_pw", "name": "Password", "focused": True, "masked": True}
    await recorder.observe(live, ScreenParams(), _observe([masked]), memoryview(JPEG))
    await recorder.input(live, TYPE_SECRET, _done(("type_text", 1.0)))

    steps = await store.service(recorder).steps("acc_1", "ses_1")

    assert steps[0]["targets"][0]["name"] == "Password"
    assert steps[1]["events"] == [{"type": "type_text", "text": "[redacted]"}]


async def test_a_stopped_batch_keeps_its_receipts_and_stop(store: Store) -> None:
    live = await _session(store, "ses_1")
    recorder = store.recorder()
    receipts = [{"index": 0, "type": "mouse_move", "ok": False, "at_ms": 2, "x": 1, "y": 1}]
    stopped = input_stopped("expectation_failed", "no change", receipts, 0)
    await recorder.input(live, {"events": [{"type": "mouse_move", "x": 1, "y": 1}]}, stopped)

    (step,) = await store.service(recorder).steps("acc_1", "ses_1")

    assert step["outcome"] == "stopped"
    assert step["receipts"] == receipts
    assert step["error"] == {
        "status": 409,
        "code": "expectation_failed",
        "detail": "no change",
        "stopped_at": 0,
    }


async def test_steps_past_the_byte_cap_are_dropped_from_then_on(store: Store) -> None:
    live = await _session(store, "ses_1")
    recorder = store.recorder(max_bytes=3000)
    for _ in range(3):
        await recorder.screenshot(live, ScreenParams(), _shot())
    # Small enough to fit, but after the cap was hit: a recording stops, with no holes.
    await recorder.input(live, TYPE_SECRET, _done(("type_text", 1.0)))
    service = store.service(recorder)

    steps = await service.steps("acc_1", "ses_1")
    manifest = await _manifest(service)

    assert [s["seq"] for s in steps] == [1, 2]
    assert manifest["steps"] == 2
    assert manifest["dropped_steps"] == 2
    assert manifest["bytes"] <= 3000


async def test_steps_past_the_step_cap_are_dropped_and_counted(store: Store) -> None:
    live = await _session(store, "ses_1")
    recorder = store.recorder(max_steps=2)
    for _ in range(5):
        await recorder.input(live, TYPE_SECRET, _done(("type_text", 1.0)))
    service = store.service(recorder)

    manifest = await _manifest(service)

    assert (manifest["steps"], manifest["dropped_steps"]) == (2, 3)


async def test_a_recording_goes_on_from_the_stores_tally_on_another_node(store: Store) -> None:
    live = await _session(store, "ses_1")
    first = store.recorder()
    await first.screenshot(live, ScreenParams(), _shot())
    await first.stop()
    second = store.recorder()
    await second.screenshot(live, ScreenParams(), _shot())

    steps = await store.service(second).steps("acc_1", "ses_1")

    assert [s["seq"] for s in steps] == [1, 2]
    assert [s["frame"] for s in steps] == ["frames/000001.jpg", "frames/000002.jpg"]


async def test_the_archive_holds_steps_frames_and_manifest(store: Store) -> None:
    live = await _session(store, "ses_1")
    recorder = store.recorder()
    await recorder.screenshot(live, ScreenParams(), _shot())
    await recorder.input(live, TYPE_SECRET, _done(("type_text", 1.0)))
    await recorder.screenshot(live, ScreenParams(), _shot(JPEG[:-2] + b"\x01\xff\xd9"))
    service = store.service(recorder)

    archive = await _archive(service)

    assert archive.namelist() == [
        "steps.jsonl",
        "frames/000001.jpg",
        "frames/000003.jpg",
        "manifest.json",
    ]
    assert archive.read("frames/000001.jpg") == JPEG
    assert archive.getinfo("frames/000001.jpg").compress_type == zipfile.ZIP_STORED
    lines = archive.read("steps.jsonl").decode().splitlines()
    assert [json.loads(line)["kind"] for line in lines] == ["screenshot", "input", "screenshot"]
    manifest = json.loads(archive.read("manifest.json"))
    assert (manifest["steps"], manifest["frames"], manifest["status"]) == (3, 2, "active")


async def test_a_recording_spanning_several_pages_is_whole(store: Store) -> None:
    live = await _session(store, "ses_1")
    recorder = store.recorder()
    for _ in range(120):  # more than two pages of the archive's reads
        await recorder.screenshot(live, ScreenParams(), _shot())
    service = store.service(recorder)

    archive = await _archive(service)

    frames = [name for name in archive.namelist() if name.startswith("frames/")]
    assert len(frames) == 120
    assert len(archive.read("steps.jsonl").decode().splitlines()) == 120


async def test_a_frame_is_read_by_its_step(store: Store) -> None:
    live = await _session(store, "ses_1")
    recorder = store.recorder()
    await recorder.screenshot(live, ScreenParams(), _shot())
    await recorder.input(live, TYPE_SECRET, _done(("type_text", 1.0)))
    service = store.service(recorder)

    assert await service.frame("acc_1", "ses_1", 1) == JPEG
    with pytest.raises(NotFound, match="step 2 has no frame"):
        await service.frame("acc_1", "ses_1", 2)


async def test_a_session_that_did_not_record_has_no_recording(store: Store) -> None:
    await _session(store, "ses_1", record=False)
    service = store.service(store.recorder())

    with pytest.raises(NotFound) as refused:
        await service.steps("acc_1", "ses_1")

    assert refused.value.code == "recording_not_found"
    assert "record: true" in refused.value.detail


async def test_another_accounts_recording_is_session_not_found(store: Store) -> None:
    await _session(store, "ses_1")
    service = store.service(store.recorder())

    with pytest.raises(NotFound) as refused:
        await service.archive("acc_2", "ses_1")

    assert refused.value.code == "session_not_found"


async def test_the_cleaner_deletes_only_recordings_past_their_retention(store: Store) -> None:
    recorder = store.recorder()
    service = store.service(recorder)
    for session_id in ("ses_old", "ses_new", "ses_live"):
        await recorder.screenshot(await _session(store, session_id), ScreenParams(), _shot())
    await recorder.flush()
    await _end(store, "ses_old")
    store.clock.advance(3 * DAY_S)
    await _end(store, "ses_new")
    store.clock.advance(4 * DAY_S + 1)  # ses_old ended 7 days and a second ago
    cleaner = RecordingCleaner(service, interval_s=3600)

    deleted = await cleaner.run_once()

    assert deleted == 1
    with pytest.raises(NotFound, match="the recording expired \\(kept 7 days"):
        await service.steps("acc_1", "ses_old")
    assert len(await service.steps("acc_1", "ses_new")) == 1
    assert len(await service.steps("acc_1", "ses_live")) == 1
    store.clock.advance(100 * DAY_S)
    assert await cleaner.run_once() == 1  # ses_new's turn; a live one's never comes
    assert len(await service.steps("acc_1", "ses_live")) == 1


async def test_the_cleaner_runs_a_pass_when_it_starts(store: Store) -> None:
    recorder = store.recorder()
    await recorder.screenshot(await _session(store, "ses_1"), ScreenParams(), _shot())
    await recorder.flush()
    await _end(store, "ses_1")
    store.clock.advance(8 * DAY_S)
    cleaner = RecordingCleaner(store.service(recorder), interval_s=3600)

    cleaner.start()
    await cleaner.passed.wait()
    await cleaner.stop()

    assert cleaner.passes == 1
    async with store.db() as db:
        assert await repository.get(db, "ses_1") is None


async def _archive(service: RecordingService) -> zipfile.ZipFile:
    chunks = [chunk async for chunk in await service.archive("acc_1", "ses_1")]
    return zipfile.ZipFile(io.BytesIO(b"".join(chunks)))


async def _manifest(service: RecordingService) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((await _archive(service)).read("manifest.json"))
    return manifest


class FailingOnce:
    """The store's session maker, whose first transaction fails (a store hiccup)."""

    def __init__(self, db: async_sessionmaker[DbSession]) -> None:
        self._db = db
        self.failures = 0

    def begin(self) -> Any:
        if self.failures == 0:
            self.failures += 1
            raise ConnectionError("the store went away")
        return self._db.begin()


async def test_a_failed_write_loses_its_steps_and_the_writer_goes_on(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    live = await _session(store, "ses_1")
    failing = FailingOnce(store.db)
    recorder = Recorder(cast(Any, failing), store.clock, max_bytes=10_000_000, max_steps=1000)
    await recorder.screenshot(live, ScreenParams(), _shot())
    await recorder.flush()
    await recorder.screenshot(live, ScreenParams(), _shot())

    steps = await store.service(recorder).steps("acc_1", "ses_1")

    assert failing.failures == 1
    assert "writing 1 recording steps failed" in caplog.text
    assert [s["seq"] for s in steps] == [1]
    await recorder.stop()
