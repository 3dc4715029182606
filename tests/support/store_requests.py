"""Requests that each need the gateway's store, for the tests that take the store away:
while it is gone each must answer 503 (or 200 where the gateway needs no store for it),
never 500."""

from __future__ import annotations

import httpx2

__all__ = ["statuses_of_store_requests"]


async def statuses_of_store_requests(
    client: httpx2.AsyncClient, session_id: str, rig_id: str
) -> list[int]:
    """Statuses of: the session read, the rig list, a new session on `rig_id`, a
    screenshot and an input batch of `session_id` (in this order)."""
    answers = [
        await client.get(f"/v1/sessions/{session_id}"),
        await client.get("/v1/rigs"),
        await client.post("/v1/sessions", json={"rig_id": rig_id}),
        await client.get(f"/v1/sessions/{session_id}/screenshot"),
        await client.post(
            f"/v1/sessions/{session_id}/input",
            json={"events": [{"type": "mouse_move", "x": 1, "y": 1}]},
        ),
    ]
    return [answer.status_code for answer in answers]
