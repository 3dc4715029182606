"""Public ids: a type prefix and 96 random bits (`rig_…`, `ses_…`, `acc_…`)."""

from __future__ import annotations

import secrets
import uuid


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def new_uuid() -> str:
    return str(uuid.uuid4())
