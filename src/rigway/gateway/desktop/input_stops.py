"""The 409 of an input batch the host refused or stopped, from its failed reply.

The reply's error code says why (desktop_unavailable, owner_active, target_gone,
expectation_failed, stale_frame) and its body (`ops.InputStopped`) what ran: the
receipts up to the event that stopped the batch, or the rectangles that made its frame
stale. The body is untrusted input like every reply: a malformed one leaves the error
alone.
"""

from __future__ import annotations

from pydantic import ValidationError

from rigway.gateway.desktop.schemas import EventReceiptOut
from rigway.gateway.errors import (
    ApiError,
    Conflict,
    desktop_unavailable,
    input_stopped,
    stale_frame,
)
from rigway.gateway.hostlink.connection import HostOpError
from rigway.protocol import ops

INPUT_STOPS = frozenset(
    {
        ops.ERROR_DESKTOP_UNAVAILABLE,
        ops.ERROR_OWNER_ACTIVE,
        ops.ERROR_TARGET_GONE,
        ops.ERROR_EXPECTATION_FAILED,
        ops.ERROR_STALE_FRAME,
    }
)


def input_conflict(exc: HostOpError, refused_state: ops.DesktopState) -> ApiError:
    """Stopped part-way (`stopped_at` given), the 409 carries the receipts of what ran;
    refused whole without saying so (an agent that sends no body), the error alone;
    stale_frame always carries its rectangles. `refused_state` is the state a
    desktop_unavailable names, read from its untrusted detail by the caller."""
    try:
        stopped = ops.InputStopped.model_validate(exc.body)
    except ValidationError:
        stopped = ops.InputStopped()
    if exc.code == ops.ERROR_STALE_FRAME:
        return stale_frame(exc.detail, stopped.rects)
    refused = exc.code == ops.ERROR_DESKTOP_UNAVAILABLE
    detail = refused_state if refused else exc.detail
    if stopped.stopped_at is None:
        return desktop_unavailable(detail) if refused else Conflict(detail, code=exc.code)
    receipts = [EventReceiptOut.of(receipt).model_dump() for receipt in stopped.events]
    return input_stopped(exc.code, detail, receipts, stopped.stopped_at)
