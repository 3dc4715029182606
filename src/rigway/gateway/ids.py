"""Public ids: a type prefix and 96 random bits (`rig_…`, `ses_…`, `acc_…`)."""

from __future__ import annotations

import re
import secrets
import uuid

# Every id the gateway hands out: a type prefix with hex, or a UUID. Anything else (a
# NUL byte, 10 kB of text) cannot name a row, so lookups answer "not found" without
# asking the store, which could choke on it (PostgreSQL text refuses NUL).
_WELL_FORMED = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(12)}"


def new_uuid() -> str:
    return str(uuid.uuid4())


def is_well_formed(value: str) -> bool:
    return _WELL_FORMED.fullmatch(value) is not None
