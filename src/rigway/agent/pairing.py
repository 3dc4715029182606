"""Pairing: trade a one-time code from the console for this rig's id and token.

`pair()` raises `PairingError` with a message fit for the person at the rig: the code
was refused, the gateway could not be reached, or it answered something unexpected.
The token is returned once and must be stored by the caller; it is never logged.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import httpx2

__all__ = ["PAIR_PATH", "PairingError", "PairingResult", "pair"]

PAIR_PATH = "/v1/agent/pair"


class PairingError(Exception):
    def __init__(self, message: str, *, status_code: int | None = None) -> None:
        super().__init__(message)
        self.status_code = status_code


@dataclass(frozen=True, slots=True)
class PairingResult:
    rig_id: str
    rig_token: str

    def __repr__(self) -> str:
        # The token is a secret: keep it out of logs and tracebacks.
        return f"PairingResult(rig_id={self.rig_id!r}, rig_token='***')"


async def pair(
    base_url: str,
    code: str,
    name: str,
    os: str,
    gpu: str,
    *,
    transport: httpx2.AsyncBaseTransport | None = None,
    timeout_s: float = 15.0,
) -> PairingResult:
    """POST the code to `{base_url}/v1/agent/pair`; the rig's id and token."""
    # The gateway caps os and gpu at 128 characters; detection output can be longer.
    payload = {"code": code.strip(), "name": name, "os": os[:128], "gpu": gpu[:128]}
    try:
        async with (
            asyncio.timeout(timeout_s),
            httpx2.AsyncClient(
                base_url=base_url.rstrip("/"),
                transport=transport,
                timeout=timeout_s,
                follow_redirects=False,
            ) as client,
        ):
            response = await client.post(PAIR_PATH, json=payload)
    except TimeoutError as exc:
        raise PairingError(
            f"the gateway at {base_url} did not answer within {timeout_s:.0f} s"
        ) from exc
    except httpx2.HTTPError as exc:
        raise PairingError(f"cannot reach the gateway at {base_url}: {exc}") from exc
    return _result(response)


def _result(response: httpx2.Response) -> PairingResult:
    status = response.status_code
    body = _json_object(response)
    if status >= 400:
        reason = body.get("error") if body is not None else None
        if not isinstance(reason, str) or reason == "":
            reason = response.reason_phrase or "no reason given"
        hint = (
            " (the code may be wrong, used or expired)"
            if status in (400, 401, 403, 404, 410)
            else ""
        )
        raise PairingError(f"pairing refused (HTTP {status}): {reason}{hint}", status_code=status)
    rig_id = None if body is None else body.get("rig_id")
    rig_token = None if body is None else body.get("rig_token")
    if not isinstance(rig_id, str) or not isinstance(rig_token, str) or not rig_id or not rig_token:
        raise PairingError(
            f"the gateway answered HTTP {status} without a rig_id and rig_token", status_code=status
        )
    return PairingResult(rig_id=rig_id, rig_token=rig_token)


def _json_object(response: httpx2.Response) -> dict[str, Any] | None:
    try:
        value = response.json()
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
