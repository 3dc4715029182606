"""Rig rules: reading rigs with their live state, pairing agents, rig tokens."""

from __future__ import annotations

import builtins
import hashlib
import hmac
import secrets
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker

from rigway.gateway.clock import Clock
from rigway.gateway.cluster.forwarding import ForwardToHolder
from rigway.gateway.cluster.ownership import (
    HolderUrlOf,
    HolderUrlsOf,
    held_by_no_other_node,
    held_by_no_other_nodes,
)
from rigway.gateway.db.models import PairingCode, Rig
from rigway.gateway.errors import InvalidRequest, rig_not_found
from rigway.gateway.ids import new_id
from rigway.gateway.rigs import repository
from rigway.gateway.rigs.schemas import PairingCodeOut, PairOut, RigOut, displays_out
from rigway.gateway.sessions import repository as sessions_repository
from rigway.protocol import Hello
from rigway.protocol.messages import DisplayInfo
from rigway.protocol.ops import DesktopState


@dataclass(frozen=True, slots=True)
class OwnerControls:
    """What the owner allows API sessions on a rig; None leaves a control as it is.
    Bounds are the callers' to check (`UpdateRigIn`, the console's form)."""

    app_mode_only: bool | None = None
    owner_idle_s: int | None = None
    recordings_allowed: bool | None = None

    def apply_to(self, rig: Rig) -> None:
        if self.app_mode_only is not None:
            rig.app_mode_only = self.app_mode_only
        if self.owner_idle_s is not None:
            rig.owner_idle_s = self.owner_idle_s
        if self.recordings_allowed is not None:
            rig.recordings_allowed = self.recordings_allowed


# Pairing codes are typed by people: no 0/O or 1/I/L.
_CODE_ALPHABET = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
_RIG_TOKEN_PREFIX = "rgwr_"  # noqa: S105 (a public prefix, not a secret)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _normalise_code(code: str) -> str:
    return code.replace("-", "").replace(" ", "").upper()


class RigService:
    def __init__(
        self,
        db_sessions: async_sessionmaker[DbSession],
        clock: Clock,
        *,
        is_online: Callable[[str], bool],
        active_session_for: Callable[[str], str | None],
        pairing_code_ttl_s: float,
        desktop_state_of: Callable[[str], DesktopState | None],
        displays_of: Callable[[str], Sequence[DisplayInfo]] = lambda _rig_id: [],
    ) -> None:
        self._db_sessions = db_sessions
        self._clock = clock
        self._is_online = is_online
        self._active_session_for = active_session_for
        self._desktop_state_of = desktop_state_of
        self._displays_of = displays_of
        self._pairing_code_ttl_s = pairing_code_ttl_s
        # Of these rigs, those whose link another node of the service holds.
        self.held_elsewhere: Callable[[list[str]], Awaitable[set[str]]] = _held_nowhere_else
        # The address of the other node holding a rig's link, if any (cluster/ownership).
        self.holder_url: HolderUrlOf = held_by_no_other_node
        # Of these rigs, those another node holds, with its address (one lookup).
        self.holder_urls: HolderUrlsOf = held_by_no_other_nodes

    def view(
        self, rig: Rig, *, is_held_elsewhere: bool = False, session_elsewhere: str | None = None
    ) -> RigOut:
        """The rig as this node sees it; `is_held_elsewhere`: online on another node
        (whose link state, desktop state and displays this node does not have), where
        `session_elsewhere` is its active session, as the store says."""
        return RigOut(
            id=rig.id,
            name=rig.name,
            online=is_held_elsewhere or self._is_online(rig.id),
            gpu=rig.gpu,
            os=rig.os,
            api_access_enabled=rig.api_access_enabled,
            native_width=rig.native_width,
            native_height=rig.native_height,
            agent_version=rig.agent_version,
            last_seen_at=rig.last_seen_at,
            active_session_id=self._active_session_for(rig.id) or session_elsewhere,
            desktop_state=self._desktop_state_of(rig.id),
            displays=displays_out(self._displays_of(rig.id)),
            app_mode_only=rig.app_mode_only,
            owner_idle_s=rig.owner_idle_s,
            recordings_allowed=rig.recordings_allowed,
        )

    async def list(self, account_id: str) -> list[RigOut]:
        async with self._db_sessions() as db:
            rigs = await repository.list_for_account(db, account_id)
        elsewhere = await self.held_elsewhere([r.id for r in rigs if not self._is_online(r.id)])
        sessions_elsewhere: dict[str, str] = {}
        if elsewhere:
            # Sessions other nodes serve are not live here: their ids are the store's.
            async with self._db_sessions() as db:
                active = await sessions_repository.list_active(db, account_id, None)
            sessions_elsewhere = {row.rig_id: row.id for row in active if row.rig_id in elsewhere}
        return [
            self.view(
                rig,
                is_held_elsewhere=rig.id in elsewhere,
                session_elsewhere=sessions_elsewhere.get(rig.id),
            )
            for rig in rigs
        ]

    async def view_anywhere(self, rig: Rig) -> RigOut:
        """`view` by the node holding the rig's link: when another node holds it, that
        node answers (`ForwardToHolder`), as only it knows the link's live state."""
        await self.forward_if_held_elsewhere(rig.id)
        return self.view(rig)

    async def held_by_other_nodes(self, rigs: Sequence[RigOut]) -> dict[str, builtins.list[str]]:
        """Of `rigs`, those online on another node (whose live state only it knows):
        their ids by that node's address."""
        elsewhere = [rig.id for rig in rigs if rig.online and not self._is_online(rig.id)]
        held_by: dict[str, builtins.list[str]] = {}
        for rig_id, holder in (await self.holder_urls(elsewhere)).items():
            held_by.setdefault(holder, []).append(rig_id)
        return held_by

    async def forward_if_held_elsewhere(self, rig_id: str) -> None:
        """Raises `ForwardToHolder` when another node holds the rig's link."""
        if not self._is_online(rig_id):
            holder = await self.holder_url(rig_id)
            if holder is not None:
                raise ForwardToHolder(holder, rig_id)

    async def get(self, account_id: str, rig_id: str) -> Rig:
        async with self._db_sessions() as db:
            rig = await repository.get_for_account(db, account_id, rig_id)
        if rig is None:
            raise rig_not_found()
        return rig

    async def create_pairing_code(self, account_id: str) -> PairingCodeOut:
        raw = "".join(secrets.choice(_CODE_ALPHABET) for _ in range(10))
        expires_at = self._clock.now() + timedelta(seconds=self._pairing_code_ttl_s)
        async with self._db_sessions.begin() as db:
            db.add(
                PairingCode(code_hash=_sha256(raw), account_id=account_id, expires_at=expires_at)
            )
        return PairingCodeOut(code=f"{raw[:5]}-{raw[5:]}", expires_at=expires_at)

    async def pair(self, code: str, *, name: str, os: str, gpu: str) -> PairOut:
        token = _RIG_TOKEN_PREFIX + secrets.token_hex(32)
        now = self._clock.now()
        async with self._db_sessions.begin() as db:
            account_id = await repository.claim_pairing_code(
                db, _sha256(_normalise_code(code)), now
            )
            if account_id is None:
                raise InvalidRequest("pairing code is unknown, used or expired")
            rig = Rig(
                id=new_id("rig"),
                account_id=account_id,
                name=name,
                os=os,
                gpu=gpu,
                api_access_enabled=False,
                token_hash=_sha256(token),
                created_at=now,
            )
            db.add(rig)
        return PairOut(rig_id=rig.id, rig_token=token)

    async def authenticate_rig_token(self, token: str | None) -> Rig | None:
        if token is None or not token.startswith(_RIG_TOKEN_PREFIX):
            return None
        token_hash = _sha256(token)
        async with self._db_sessions() as db:
            rig = await repository.by_token_hash(db, token_hash)
        # The index lookup already matched; compare again in constant time so the
        # decision never rests on a short-circuiting string comparison.
        if rig is None or rig.token_hash is None:
            return None
        return rig if hmac.compare_digest(rig.token_hash.encode(), token_hash.encode()) else None

    async def record_hello(self, rig_id: str, hello: Hello) -> None:
        async with self._db_sessions.begin() as db:
            rig = await db.get(Rig, rig_id)
            if rig is None:
                return
            rig.native_width = hello.native_width
            rig.native_height = hello.native_height
            rig.capture_mode = hello.capture_mode or None
            rig.agent_version = hello.agent_version
            rig.os = hello.os or rig.os
            rig.gpu = hello.gpu or rig.gpu
            rig.mac = hello.mac
            rig.lan = hello.lan
            rig.last_seen_at = self._clock.now()

    async def record_seen(self, rig_id: str, at: datetime) -> None:
        """Its agent was heard until `at`, when its link closed. What the console shows
        as "last seen" while the rig is offline."""
        async with self._db_sessions.begin() as db:
            rig = await db.get(Rig, rig_id)
            if rig is not None:
                rig.last_seen_at = at

    async def update(
        self,
        account_id: str,
        rig_id: str,
        *,
        name: str | None,
        api_access_enabled: bool | None,
        controls: OwnerControls | None = None,
    ) -> Rig:
        """Changes what is given; None leaves a field (or a control) as it is."""
        async with self._db_sessions.begin() as db:
            rig = await repository.get_for_account(db, account_id, rig_id)
            if rig is None:
                raise rig_not_found()
            if name is not None:
                rig.name = name
            if api_access_enabled is not None:
                rig.api_access_enabled = api_access_enabled
            if controls is not None:
                controls.apply_to(rig)
        return rig

    async def unpair(self, account_id: str, rig_id: str) -> Rig:
        """Forgets the rig: its token stops working and it leaves every listing."""
        async with self._db_sessions.begin() as db:
            rig = await repository.get_for_account(db, account_id, rig_id)
            if rig is None:
                raise rig_not_found()
            rig.unpaired_at = self._clock.now()
            rig.token_hash = None
            rig.api_access_enabled = False
        return rig

    async def lan_neighbours(self, rig: Rig) -> builtins.list[Rig]:
        """Other rigs of the account last seen on the same LAN."""
        if rig.lan is None:
            return []
        async with self._db_sessions() as db:
            rigs = await repository.list_for_account(db, rig.account_id)
        return [other for other in rigs if other.id != rig.id and other.lan == rig.lan]

    async def set_api_access(self, account_id: str, rig_id: str, enabled: bool) -> Rig:
        async with self._db_sessions.begin() as db:
            rig = await repository.get_for_account(db, account_id, rig_id)
            if rig is None:
                raise rig_not_found()
            rig.api_access_enabled = enabled
        return rig


async def _held_nowhere_else(rig_ids: list[str]) -> set[str]:
    return set()
