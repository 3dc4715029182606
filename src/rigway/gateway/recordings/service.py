"""Reading recordings (the archive, the console's replay) and deleting expired ones.

A recording is readable by its session's account from any gateway node, while the
session runs and until `recording_retention_s` after it ended. What this node's
recorder still holds in its queue is written before a read (`Recorder.flush`); steps
another node has queued reach the store a moment later.
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker

from rigway.gateway.clock import Clock
from rigway.gateway.errors import NotFound
from rigway.gateway.recordings import repository
from rigway.gateway.recordings.recorder import Recorder, frame_name
from rigway.gateway.sessions.schemas import SessionOut
from rigway.gateway.sessions.service import SessionService
from rigway.gateway.settings import GatewaySettings

__all__ = ["RecordingService", "recording_not_found"]

# Steps read from the store at a time while an archive is written: bounds the memory
# one download holds to a page of JPEGs, whatever the recording's size.
PAGE_STEPS = 50
# Expired recordings deleted per transaction by the cleaner.
DELETE_BATCH = 100
REDACTION_NOTE = (
    "Masked values are [redacted] in targets (by the host) and in typed text: text typed"
    " while the focus was on a masked target, as the recorder last saw the targets."
)


def recording_not_found(reason: str) -> NotFound:
    return NotFound(reason, code="recording_not_found")


class RecordingService:
    def __init__(
        self,
        db: async_sessionmaker[DbSession],
        clock: Clock,
        settings: GatewaySettings,
        sessions: SessionService,
        recorder: Recorder,
    ) -> None:
        self._db = db
        self._clock = clock
        self._settings = settings
        self._sessions = sessions
        self._recorder = recorder

    async def _readable(self, account_id: str, session_id: str) -> SessionOut:
        """The session, when its recording can be read: 404 session_not_found for
        another account's, 404 recording_not_found with the reason otherwise."""
        session = await self._sessions.get(account_id, session_id)
        if not session.record:
            raise recording_not_found("the session was not started with record: true")
        retention = timedelta(seconds=self._settings.recording_retention_s)
        if session.ended_at is not None and session.ended_at + retention <= self._clock.now():
            raise recording_not_found(
                f"the recording expired (kept {_days(retention)} after its session ended)"
            )
        await self._recorder.flush()
        return session

    async def steps(self, account_id: str, session_id: str) -> list[dict[str, Any]]:
        """Every step's record, in order (the archive's `steps.jsonl`)."""
        await self._readable(account_id, session_id)
        records: list[dict[str, Any]] = []
        async with self._db() as db:
            while True:
                after = records[-1]["seq"] if records else 0
                page = await repository.step_records(
                    db, session_id, after_seq=after, limit=PAGE_STEPS * 20
                )
                records.extend(record for _seq, record in page)
                if len(page) < PAGE_STEPS * 20:
                    return records

    async def frame(self, account_id: str, session_id: str, seq: int) -> bytes:
        await self._readable(account_id, session_id)
        async with self._db() as db:
            jpeg = await repository.step_jpeg(db, session_id, seq)
        if jpeg is None:
            raise NotFound(f"step {seq} has no frame", code="frame_not_found")
        return jpeg

    async def archive(self, account_id: str, session_id: str) -> AsyncIterator[bytes]:
        """The zip, checked before its first byte (the 404s above), then written a page
        of steps at a time: `steps.jsonl`, `frames/<seq>.jpg`, `manifest.json`."""
        session = await self._readable(account_id, session_id)
        async with self._db() as db:
            tally = await repository.get(db, session_id)
        manifest = {
            "session_id": session.session_id,
            "rig_id": session.rig_id,
            "started_at": session.started_at.isoformat(),
            "ended_at": None if session.ended_at is None else session.ended_at.isoformat(),
            "status": session.status,
            "steps": 0 if tally is None else tally.step_count,
            "frames": 0 if tally is None else tally.frame_count,
            "bytes": 0 if tally is None else tally.total_bytes,
            "dropped_steps": 0 if tally is None else tally.dropped_steps,
            "caps": {
                "max_bytes": self._settings.recording_max_bytes,
                "max_steps": self._settings.recording_max_steps,
            },
            "redaction": REDACTION_NOTE,
        }
        return self._zip(session_id, manifest)

    async def _zip(self, session_id: str, manifest: dict[str, Any]) -> AsyncIterator[bytes]:
        sink = _Chunks()
        with zipfile.ZipFile(sink, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            with archive.open("steps.jsonl", "w") as steps_file:
                after = 0
                while True:
                    async with self._db() as db:
                        page = await repository.step_records(
                            db, session_id, after_seq=after, limit=PAGE_STEPS
                        )
                    for seq, record in page:
                        steps_file.write(json.dumps(record).encode() + b"\n")
                        after = seq
                    yield sink.take()
                    if len(page) < PAGE_STEPS:
                        break
            after = 0
            while True:
                async with self._db() as db:
                    jpegs = await repository.step_jpegs(
                        db, session_id, after_seq=after, limit=PAGE_STEPS
                    )
                for seq, jpeg in jpegs:
                    # Stored, not deflated: a JPEG does not compress.
                    archive.writestr(frame_name(seq), jpeg, compress_type=zipfile.ZIP_STORED)
                    after = seq
                    yield sink.take()
                if len(jpegs) < PAGE_STEPS:
                    break
            archive.writestr("manifest.json", json.dumps(manifest, indent=2))
        yield sink.take()

    async def delete_expired(self) -> int:
        """The cleaner's pass: deletes recordings whose session ended more than the
        retention ago; answers how many."""
        cutoff = self._clock.now() - timedelta(seconds=self._settings.recording_retention_s)
        deleted = 0
        while True:
            async with self._db.begin() as db:
                expired = await repository.ended_before(db, cutoff, DELETE_BATCH)
                if expired:
                    await repository.delete_recordings(db, expired)
            deleted += len(expired)
            if len(expired) < DELETE_BATCH:
                return deleted


class _Chunks:
    """A write-only, unseekable file for zipfile: what it wrote since the last take."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._offset = 0

    def write(self, data: bytes) -> int:
        self._parts.append(bytes(data))
        self._offset += len(data)
        return len(data)

    def tell(self) -> int:
        return self._offset

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take(self) -> bytes:
        data = b"".join(self._parts)
        self._parts.clear()
        return data


def _days(retention: timedelta) -> str:
    days = retention.total_seconds() / 86400
    if days >= 1 and days == int(days):
        return f"{int(days)} day{'s' if days != 1 else ''}"
    return f"{int(retention.total_seconds())} s"
