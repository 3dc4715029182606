"""One webhook delivery: re-check the target, POST to the checked address, record the result.

- The URL is checked again at delivery time (`check_webhook_url`): a name that now
  resolves to a refused address gets no request at all.
- The connection goes to the first checked address; the Host header and the TLS SNI keep
  the name (httpx2's `sni_hostname` request extension) and the certificate is verified
  against the name, so DNS is never consulted a second time between check and connect.
- TLS trust: the system trust store, plus `ca_bundle` when given (RIGWAY_WEBHOOK_CA_BUNDLE,
  for a private CA in tests or inside a company). Both are trusted, never only the bundle,
  so adding a bundle cannot break deliveries to public receivers.
- httpx timeouts are per phase, so the whole delivery (DNS, connect, TLS, request,
  response) runs inside `asyncio.timeout(timeout_s)`.
- Redirects are not followed (a 3xx is a failure with its status); proxies and other
  environment settings are ignored (`trust_env=False`); the response body is read raw
  (never decompressed) and at most `max_response_bytes` of it.
- `deliver` never raises for network trouble: it returns a `DeliveryResult` whose
  `error` says what went wrong, ready for the webhook's `last_status`/`last_error`.
"""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

import httpx2

from rigway.gateway.webhooks.ssrf import (
    CheckedTarget,
    Resolver,
    UnsafeWebhookUrl,
    check_webhook_url,
)

__all__ = ["DeliveryResult", "deliver"]

USER_AGENT = "Rigway-Webhooks/1.0"
DEFAULT_TIMEOUT_S = 5.0
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024
_MAX_ERROR_LENGTH = 300


@dataclass(frozen=True, slots=True)
class DeliveryResult:
    """`status` is the receiver's HTTP status (None when no response came back)."""

    status: int | None
    error: str | None
    delivered_at: datetime

    @property
    def is_success(self) -> bool:
        return self.error is None


def _utc_now() -> datetime:
    return datetime.now(UTC)


async def deliver(
    url: str,
    raw_body: bytes,
    headers: Mapping[str, str],
    *,
    resolver: Resolver,
    allow_private: bool,
    ca_bundle: str | None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
    now: Callable[[], datetime] = _utc_now,
) -> DeliveryResult:
    """POST `raw_body` with `headers` to the webhook at `url`; never raises for I/O errors."""
    delivered_at = now()
    try:
        ssl_context = _ssl_context(ca_bundle)
    except (OSError, ssl.SSLError) as exc:
        return DeliveryResult(None, _short(f"webhook CA bundle unusable: {exc}"), delivered_at)
    try:
        async with asyncio.timeout(timeout_s):
            target = await check_webhook_url(url, resolver=resolver, allow_private=allow_private)
            status = await _post(
                target, raw_body, headers, ssl_context, timeout_s, max_response_bytes
            )
    except UnsafeWebhookUrl as exc:
        return DeliveryResult(None, f"refused: {exc}", delivered_at)
    except (TimeoutError, httpx2.TimeoutException):
        return DeliveryResult(None, f"timed out after {timeout_s:g} s", delivered_at)
    except (httpx2.HTTPError, OSError) as exc:
        return DeliveryResult(None, _short(_describe(exc)), delivered_at)
    return DeliveryResult(status, _status_error(status), delivered_at)


async def _post(
    target: CheckedTarget,
    raw_body: bytes,
    headers: Mapping[str, str],
    ssl_context: ssl.SSLContext,
    timeout_s: float,
    max_response_bytes: int,
) -> int:
    # One client per delivery: the pool is keyed by the pinned address, so a shared pool
    # could reuse a TLS connection made with another webhook's SNI on the same address.
    async with httpx2.AsyncClient(
        verify=ssl_context,
        trust_env=False,
        follow_redirects=False,
        timeout=httpx2.Timeout(timeout_s),
    ) as client:
        request = client.build_request(
            "POST",
            target.pinned_url(),
            content=raw_body,
            headers=_request_headers(headers, target),
            extensions={"sni_hostname": target.host},
        )
        response = await client.send(request, stream=True)
        try:
            await _drain_capped(response, max_response_bytes)
        finally:
            await response.aclose()
        return response.status_code


def _request_headers(headers: Mapping[str, str], target: CheckedTarget) -> httpx2.Headers:
    merged = httpx2.Headers({"User-Agent": USER_AGENT})
    merged.update(headers)  # case-insensitive replace
    # The Host header always names the checked host, whatever the caller passed.
    merged["Host"] = target.host_header
    return merged


async def _drain_capped(response: httpx2.Response, max_bytes: int) -> None:
    """Read at most about `max_bytes` of the raw body, then stop (the rest is dropped)."""
    received = 0
    async for chunk in response.aiter_raw():
        received += len(chunk)
        if received >= max_bytes:
            return


@functools.lru_cache(maxsize=4)
def _ssl_context(ca_bundle: str | None) -> ssl.SSLContext:
    # Cached: loading the system trust store costs milliseconds per delivery otherwise.
    context = httpx2.create_ssl_context(verify=True, trust_env=False)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    if ca_bundle is not None:
        context.load_verify_locations(cafile=ca_bundle)
    return context


def _status_error(status: int) -> str | None:
    if 200 <= status < 300:
        return None
    if 300 <= status < 400:
        return f"redirect not followed (status {status})"
    return f"receiver answered status {status}"


def _describe(exc: BaseException) -> str:
    detail = str(exc) or type(exc).__name__
    if isinstance(exc, httpx2.ConnectError):
        return f"connection failed: {detail}"
    return f"delivery failed: {detail}"


def _short(text: str) -> str:
    return text if len(text) <= _MAX_ERROR_LENGTH else text[: _MAX_ERROR_LENGTH - 1] + "…"
