"""What one rig's console page shows beyond the rig itself: the session on it now (the
API key running it, its mode, who holds control, the apps it launched), and the
owner's settings form read strictly, as the API reads `PATCH /v1/rigs/{id}`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from rigway.gateway.console import repository
from rigway.gateway.console.history import key_label
from rigway.gateway.errors import InvalidRequest, NotFound
from rigway.gateway.rigs.schemas import OWNER_IDLE_MAX_S, OWNER_IDLE_MIN_S
from rigway.gateway.rigs.service import OwnerControls
from rigway.gateway.services import Services
from rigway.gateway.sessions.live import LaunchedApp
from rigway.gateway.sessions.schemas import SessionOut

__all__ = ["CHECKBOX_ON", "CurrentSession", "current_session", "owner_controls_from_form"]

# The value every checkbox of the settings form sends when ticked (absent: unticked).
CHECKBOX_ON = "true"
_WHOLE_SECONDS = re.compile(r"[0-9]{1,6}")


@dataclass(frozen=True, slots=True)
class CurrentSession:
    session: SessionOut
    key_label: str  # "name (prefix…)", the prefix alone, or "—"
    launched_apps: list[LaunchedApp]


async def current_session(
    services: Services, account_id: str, rig_id: str
) -> CurrentSession | None:
    """The rig's live session on this gateway, if any (the rig is the caller's)."""
    live = services.sessions.live.for_rig(rig_id)
    if live is None or live.account_id != account_id:
        return None
    try:
        session = await services.sessions.get(account_id, live.id)
    except NotFound:
        return None  # ended and forgotten between the two reads
    async with services.db() as db:
        name, prefix = await repository.api_key_name_and_prefix(db, live.api_key_id)
    return CurrentSession(session, key_label(name, prefix), list(live.launched_apps))


def owner_controls_from_form(
    *, app_mode_only: str | None, owner_idle_s: str, recordings_allowed: str | None
) -> OwnerControls:
    """The settings form's three fields, strictly: a ticked box sends `true` and an
    unticked one nothing; the delay is whole seconds within its bounds. Anything else
    is a 400 that names the field."""
    idle = owner_idle_s.strip()
    if _WHOLE_SECONDS.fullmatch(idle) is None or not (
        OWNER_IDLE_MIN_S <= int(idle) <= OWNER_IDLE_MAX_S
    ):
        raise InvalidRequest(
            f"owner_idle_s: the owner-idle delay is a whole number of seconds from "
            f"{OWNER_IDLE_MIN_S} to {OWNER_IDLE_MAX_S} (0: never pause), not {owner_idle_s!r}"
        )
    return OwnerControls(
        app_mode_only=_checkbox("app_mode_only", app_mode_only),
        owner_idle_s=int(idle),
        recordings_allowed=_checkbox("recordings_allowed", recordings_allowed),
    )


def _checkbox(name: str, value: str | None) -> bool:
    if value is None:
        return False
    if value != CHECKBOX_ON:
        raise InvalidRequest(f"{name}: a ticked box sends {CHECKBOX_ON!r}, not {value!r}")
    return True
