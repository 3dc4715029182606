"""Tables of the gateway store. Every state change elsewhere is a conditional UPDATE
(`… WHERE status = 'active'`) so it happens exactly once on SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Text,
    false,
    text,
    true,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator


class UtcDateTime(TypeDecorator[datetime]):
    """Aware UTC datetimes on every store (SQLite hands back naive ones)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to the store")
        return value.astimezone(UTC)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        assert isinstance(value, datetime)
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)


class Account(Base):
    __tablename__ = "accounts"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class User(Base):
    __tablename__ = "users"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    email: Mapped[str] = mapped_column(String(320), unique=True)
    password_hash: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class ApiKey(Base):
    __tablename__ = "api_keys"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    key_prefix: Mapped[str] = mapped_column(String(32), unique=True)
    key_hash: Mapped[str] = mapped_column(String(64))
    environment: Mapped[str] = mapped_column(String(8))
    scopes: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_used_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class Rig(Base):
    __tablename__ = "rigs"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    os: Mapped[str] = mapped_column(String(128), default="")
    gpu: Mapped[str] = mapped_column(String(128), default="")
    api_access_enabled: Mapped[bool] = mapped_column(Boolean, default=False)
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    native_width: Mapped[int | None] = mapped_column(Integer, nullable=True)
    native_height: Mapped[int | None] = mapped_column(Integer, nullable=True)
    capture_mode: Mapped[str | None] = mapped_column(String(32), nullable=True)
    agent_version: Mapped[str | None] = mapped_column(String(64), nullable=True)
    mac: Mapped[str | None] = mapped_column(String(17), nullable=True)
    lan: Mapped[str | None] = mapped_column(String(64), nullable=True)
    last_seen_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    unpaired_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    # The owner's controls: API sessions only in `app` mode; how long the rig's own
    # keyboard and mouse must rest before API input is accepted again; recordings.
    app_mode_only: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    owner_idle_s: Mapped[int] = mapped_column(Integer, default=10, server_default="10")
    recordings_allowed: Mapped[bool] = mapped_column(Boolean, default=True, server_default=true())


class PairingCode(Base):
    __tablename__ = "pairing_codes"
    code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class Session(Base):
    __tablename__ = "sessions"
    __table_args__ = (
        # One active session per rig, enforced by the store itself on both dialects.
        Index(
            "uq_sessions_active_rig",
            "rig_id",
            unique=True,
            sqlite_where=text("status = 'active'"),
            postgresql_where=text("status = 'active'"),
        ),
        Index("ix_sessions_account_status", "account_id", "status"),
    )
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"))
    rig_id: Mapped[str] = mapped_column(ForeignKey("rigs.id"), index=True)
    api_key_id: Mapped[str | None] = mapped_column(String(36), nullable=True, index=True)
    mode: Mapped[str] = mapped_column(String(16))
    status: Mapped[str] = mapped_column(String(16))
    started_at: Mapped[datetime] = mapped_column(UtcDateTime())
    ended_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    ended_reason: Mapped[str | None] = mapped_column(String(32), nullable=True)
    idle_timeout_s: Mapped[int] = mapped_column(Integer)
    last_activity_at: Mapped[datetime] = mapped_column(UtcDateTime())
    action_count: Mapped[int] = mapped_column(Integer, default=0)
    capture_mode: Mapped[str | None] = mapped_column(String(32), nullable=True)
    native_width: Mapped[int | None] = mapped_column(Integer, nullable=True)
    native_height: Mapped[int | None] = mapped_column(Integer, nullable=True)
    record: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Bumped by each node that takes the session over (its host linked there): a
    # timer-driven end names the epoch it saw, so a node that lost the session ends
    # nothing (sessions/repository.py `transition`).
    owner_epoch: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # Since when no node has held the host's link, as the orphan sweeper saw it.
    host_absent_since: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)


class Webhook(Base):
    __tablename__ = "webhooks"
    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    url: Mapped[str] = mapped_column(Text)
    events: Mapped[list[str]] = mapped_column(JSON)
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    secret_encrypted: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_delivery_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True)
    last_status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)


class WebhookDelivery(Base):
    """One attempt to deliver an event to one webhook, kept for the owner to read: the
    newest few per webhook (webhooks/repository.py prunes the rest as it records)."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (Index("ix_webhook_deliveries_webhook_id_at", "webhook_id", "delivered_at"),)
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    webhook_id: Mapped[str] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"))
    event: Mapped[str] = mapped_column(String(32))
    delivered_at: Mapped[datetime] = mapped_column(UtcDateTime())
    status: Mapped[int | None] = mapped_column(Integer, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)


class WebhookOutbox(Base):
    """Events waiting for delivery: written in the same transaction as the state change
    that caused them, so a crash between the two loses nothing."""

    __tablename__ = "webhook_outbox"
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    event: Mapped[str] = mapped_column(String(32))
    payload: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    dispatched_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), nullable=True, index=True)


class Recording(Base):
    """A recorded session's tally (`record: true`); its steps are `recording_steps`.
    Kept until the retention after its session ended (recordings/tasks.py)."""

    __tablename__ = "recordings"
    session_id: Mapped[str] = mapped_column(ForeignKey("sessions.id"), primary_key=True)
    account_id: Mapped[str] = mapped_column(ForeignKey("accounts.id"), index=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    step_count: Mapped[int] = mapped_column(Integer, default=0)
    frame_count: Mapped[int] = mapped_column(Integer, default=0)
    total_bytes: Mapped[int] = mapped_column(Integer, default=0)
    # Steps past the size cap, not kept (the archive's manifest says how many).
    dropped_steps: Mapped[int] = mapped_column(Integer, default=0)


class RecordingStep(Base):
    """One step of a recording: a screenshot, an observe (with its targets) or an input
    batch (with its receipts and outcome), and the JPEG the step served, if any."""

    __tablename__ = "recording_steps"
    session_id: Mapped[str] = mapped_column(
        ForeignKey("recordings.session_id", ondelete="CASCADE"), primary_key=True
    )
    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    at: Mapped[datetime] = mapped_column(UtcDateTime())
    step: Mapped[dict[str, Any]] = mapped_column(JSON)
    jpeg: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
