"""Verify Rigway webhook deliveries in your receiver (standard library only).

A delivery is an HTTP POST whose `X-Service-Signature` header is `sha256=` + the hex
HMAC-SHA256, keyed with your whole webhook secret (`whsec_…`, prefix included), of the
`X-Service-Timestamp` value, a dot and the raw request body. `verify` recomputes it,
compares in constant time, refuses timestamps more than five minutes from your clock
(either way, against replays) and returns the parsed JSON payload.

Pass the body exactly as received: parsing and re-serialising the JSON changes the bytes
and the signature no longer matches. The `X-Service-Event` and `X-Service-Delivery`
headers are not signed; read the event type and delivery id from the returned payload
(`payload["type"]`, `payload["id"]`), and use the id to drop duplicates.

Minimal receiver (standard library):

    from http.server import BaseHTTPRequestHandler, HTTPServer
    from rigway.webhooks import WebhookVerificationError, verify

    SECRET = "whsec_..."  # shown once when the webhook was created

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            try:
                event = verify(body, self.headers, SECRET)
            except WebhookVerificationError as exc:
                self.send_error(400, str(exc))
                return
            print(event["type"], event["data"]["session_id"])
            self.send_response(204)
            self.end_headers()

    HTTPServer(("127.0.0.1", 8000), Receiver).serve_forever()

Errors:

    ValueError
    └── WebhookVerificationError
        ├── MissingHeaderError              a signature or timestamp header is absent
        ├── TimestampOutOfToleranceError    too old or too far in the future
        ├── InvalidSignatureError           malformed or not matching
        └── InvalidPayloadError             signed, but not a JSON object
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

__all__ = [
    "DEFAULT_TOLERANCE_S",
    "InvalidPayloadError",
    "InvalidSignatureError",
    "MissingHeaderError",
    "TimestampOutOfToleranceError",
    "WebhookVerificationError",
    "verify",
]

DEFAULT_TOLERANCE_S = 300
SIGNATURE_HEADER = "X-Service-Signature"
TIMESTAMP_HEADER = "X-Service-Timestamp"
_SIGNATURE_PREFIX = "sha256="
_MAX_TIMESTAMP_DIGITS = 12  # Unix seconds until the year 33658


class WebhookVerificationError(ValueError):
    """The delivery did not verify; str(exc) says why."""


class MissingHeaderError(WebhookVerificationError):
    def __init__(self, header: str) -> None:
        super().__init__(f"missing header {header}")
        self.header = header


class TimestampOutOfToleranceError(WebhookVerificationError):
    def __init__(self, timestamp: int, now: float, tolerance_s: float) -> None:
        direction = "old" if timestamp < now else "far in the future"
        super().__init__(
            f"{TIMESTAMP_HEADER} {timestamp} is too {direction}: more than "
            f"{tolerance_s:g} s from the receiver's clock"
        )
        self.timestamp = timestamp


class InvalidSignatureError(WebhookVerificationError):
    pass


class InvalidPayloadError(WebhookVerificationError):
    pass


def verify(
    raw_body: bytes,
    headers: Mapping[str, str],
    secret: str,
    *,
    tolerance_s: float = DEFAULT_TOLERANCE_S,
    now: float | None = None,
) -> dict[str, Any]:
    """Verify a delivery and return its JSON payload; raise WebhookVerificationError.

    `headers` is any mapping of header names to values (looked up case-insensitively);
    `now` is Unix seconds, the current time when None.
    """
    signature = _header(headers, SIGNATURE_HEADER)
    timestamp = _parse_timestamp(_header(headers, TIMESTAMP_HEADER))
    current = time.time() if now is None else now
    if abs(current - timestamp) > tolerance_s:
        raise TimestampOutOfToleranceError(timestamp, current, tolerance_s)
    if not _is_signature_valid(secret, timestamp, raw_body, signature):
        raise InvalidSignatureError(f"{SIGNATURE_HEADER} does not match the body")
    return _parse_payload(raw_body)


def _header(headers: Mapping[str, str], name: str) -> str:
    wanted = name.lower()
    for key, value in headers.items():
        if key.lower() == wanted:
            return value.strip()
    raise MissingHeaderError(name)


def _parse_timestamp(text: str) -> int:
    # str.isdigit alone accepts non-ASCII digits and int() accepts "1_000" and "+5".
    if not (text.isascii() and text.isdigit() and len(text) <= _MAX_TIMESTAMP_DIGITS):
        raise InvalidSignatureError(f"{TIMESTAMP_HEADER} is not Unix seconds")
    return int(text)


def _is_signature_valid(secret: str, timestamp: int, raw_body: bytes, header: str) -> bool:
    if not header.startswith(_SIGNATURE_PREFIX):
        raise InvalidSignatureError(f"{SIGNATURE_HEADER} does not start with sha256=")
    received = header[len(_SIGNATURE_PREFIX) :].lower()
    signed = f"{timestamp}.".encode("ascii") + raw_body
    expected = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()
    # Bytes, not str: compare_digest raises TypeError on a non-ASCII str.
    return hmac.compare_digest(expected.encode("ascii"), received.encode("utf-8", "replace"))


def _parse_payload(raw_body: bytes) -> dict[str, Any]:
    try:
        payload = json.loads(raw_body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidPayloadError("the signed body is not JSON") from exc
    if not isinstance(payload, dict):
        raise InvalidPayloadError("the signed body is not a JSON object")
    return payload
