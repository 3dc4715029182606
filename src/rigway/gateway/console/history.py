"""What the owner's account did: ended sessions a page at a time, with the key that ran
each, and billed minutes per calendar month. Reads only; the rules of billing stay in
the sessions feature (`SessionService.view`, `billed_minutes`), used here as they are."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker

from rigway.gateway.clock import Clock
from rigway.gateway.console import repository
from rigway.gateway.db.models import Session
from rigway.gateway.sessions.live import billed_minutes
from rigway.gateway.sessions.schemas import SessionOut

__all__ = ["ConsoleHistory", "EndedSession", "EndedSessionsPage", "MonthUsage", "key_label"]

ENDED_SESSIONS_PAGE_SIZE = 25
USAGE_MONTHS = 12
NO_KEY_LABEL = "—"


@dataclass(frozen=True, slots=True)
class EndedSession:
    session: SessionOut
    key_label: str  # "name (prefix…)", the prefix alone, or NO_KEY_LABEL


@dataclass(frozen=True, slots=True)
class EndedSessionsPage:
    sessions: list[EndedSession]
    page: int  # 1-based
    has_next: bool


@dataclass(frozen=True, slots=True)
class MonthUsage:
    month: str  # "YYYY-MM", UTC
    billed_minutes: int
    session_count: int


class ConsoleHistory:
    def __init__(
        self,
        db_sessions: async_sessionmaker[DbSession],
        clock: Clock,
        session_view: Callable[[Session], SessionOut],
        *,
        page_size: int = ENDED_SESSIONS_PAGE_SIZE,
    ) -> None:
        self._db_sessions = db_sessions
        self._clock = clock
        self._session_view = session_view
        self._page_size = page_size

    async def ended_sessions(self, account_id: str, page: int) -> EndedSessionsPage:
        async with self._db_sessions() as db:
            # One row more than a page says whether a next page exists.
            rows = await repository.ended_sessions_page(
                db, account_id, offset=(page - 1) * self._page_size, limit=self._page_size + 1
            )
        sessions = [
            EndedSession(self._session_view(row), key_label(name, prefix))
            for row, name, prefix in rows[: self._page_size]
        ]
        return EndedSessionsPage(sessions, page, has_next=len(rows) > self._page_size)

    async def usage_by_month(self, account_id: str, months: int = USAGE_MONTHS) -> list[MonthUsage]:
        """Billed minutes per UTC calendar month of the session's start, newest first,
        for the last `months` months (a live session counts up to now). Summed here
        rather than in SQL: month arithmetic differs between SQLite and PostgreSQL, and
        a year of one account's sessions is small."""
        now = self._clock.now()
        since = _month_start(now, months_back=months - 1)
        async with self._db_sessions() as db:
            rows = await repository.sessions_started_since(db, account_id, since)
        totals: dict[str, list[int]] = {}
        for started_at, ended_at, status in rows:
            month = _as_utc(started_at).strftime("%Y-%m")
            minutes = 0 if status == "failed" else billed_minutes(started_at, ended_at or now)
            total = totals.setdefault(month, [0, 0])
            total[0] += minutes
            total[1] += 1
        return [
            MonthUsage(month, minutes, count)
            for month, (minutes, count) in sorted(totals.items(), reverse=True)
        ]


def key_label(name: str | None, prefix: str | None) -> str:
    """How the console names an API key: its name and prefix, or what is known."""
    if prefix is None:
        return NO_KEY_LABEL
    return f"{name} ({prefix}…)" if name else f"{prefix}…"


def _as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _month_start(now: datetime, *, months_back: int) -> datetime:
    index = now.year * 12 + (now.month - 1) - months_back
    return datetime(index // 12, index % 12 + 1, 1, tzinfo=UTC)
