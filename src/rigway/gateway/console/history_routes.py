"""The account's past: ended sessions, a page at a time, and billed minutes per month.

GET /console/history[?page=N]      ended sessions (newest first) and monthly usage
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request
from starlette.responses import Response

from rigway.gateway.console.history import ConsoleHistory
from rigway.gateway.console.rendering import ConsoleRoute, render
from rigway.gateway.console.session import SignedInUser
from rigway.gateway.services import services_of

router = APIRouter(route_class=ConsoleRoute)

# Far past any real account's history; bounds the OFFSET a hand-typed URL can ask for.
MAX_PAGE = 100_000


@router.get("/history")
async def history_page(
    request: Request, user: SignedInUser, page: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 1
) -> Response:
    services = services_of(request)
    history = ConsoleHistory(services.db, services.clock, services.sessions.view)
    ended = await history.ended_sessions(user.account_id, page)
    usage = await history.usage_by_month(user.account_id)
    rig_names = {rig.id: rig.name for rig in await services.rigs.list(user.account_id)}
    return render(request, "history.html", user=user, ended=ended, usage=usage, rig_names=rig_names)
