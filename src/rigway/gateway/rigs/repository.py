"""The only SQL of the rigs feature."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession as DbSession

from rigway.gateway.db.models import PairingCode, Rig
from rigway.gateway.ids import is_well_formed


async def get_for_account(db: DbSession, account_id: str, rig_id: str) -> Rig | None:
    if not is_well_formed(rig_id):
        return None
    rig = await db.get(Rig, rig_id)
    if rig is None or rig.account_id != account_id or rig.unpaired_at is not None:
        return None
    return rig


async def list_for_account(db: DbSession, account_id: str) -> list[Rig]:
    query = select(Rig).where(Rig.account_id == account_id, Rig.unpaired_at.is_(None))
    return list(await db.scalars(query.order_by(Rig.created_at, Rig.id)))


async def by_token_hash(db: DbSession, token_hash: str) -> Rig | None:
    query = select(Rig).where(Rig.token_hash == token_hash, Rig.unpaired_at.is_(None))
    return await db.scalar(query)


async def claim_pairing_code(db: DbSession, code_hash: str, now_value: object) -> str | None:
    """Marks an unexpired, unused code used; returns its account id (exactly once)."""
    code = await db.get(PairingCode, code_hash)
    if code is None:
        return None
    result = await db.execute(
        update(PairingCode)
        .where(
            PairingCode.code_hash == code_hash,
            PairingCode.used_at.is_(None),
            PairingCode.expires_at > now_value,
        )
        .values(used_at=now_value)
    )
    return code.account_id if getattr(result, "rowcount", 0) == 1 else None
