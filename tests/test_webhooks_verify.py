"""The SDK's webhook receiver helper, checked against an independent HMAC computation."""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys

import pytest

from rigway.webhooks import (
    InvalidPayloadError,
    InvalidSignatureError,
    MissingHeaderError,
    TimestampOutOfToleranceError,
    WebhookVerificationError,
    verify,
)

SECRET = "whsec_" + "ab" * 32
NOW = 1_800_000_000
BODY = b'{"type":"session.ended","id":"dlv_9","data":{"session_id":"ses_1"}}'


def signed_headers(
    body: bytes = BODY, *, timestamp: int = NOW, secret: str = SECRET
) -> dict[str, str]:
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return {
        "Content-Type": "application/json",
        "X-Service-Event": "session.ended",
        "X-Service-Delivery": "dlv_9",
        "X-Service-Timestamp": str(timestamp),
        "X-Service-Signature": f"sha256={digest.hexdigest()}",
    }


def test_valid_delivery_returns_payload() -> None:
    payload = verify(BODY, signed_headers(), SECRET, now=NOW)

    assert payload["id"] == "dlv_9"
    assert payload["data"] == {"session_id": "ses_1"}


def test_lower_case_header_names_accepted() -> None:
    headers = {name.lower(): value for name, value in signed_headers().items()}

    assert verify(BODY, headers, SECRET, now=NOW)["type"] == "session.ended"


def test_missing_signature_header_refused() -> None:
    headers = signed_headers()
    del headers["X-Service-Signature"]

    with pytest.raises(MissingHeaderError, match="X-Service-Signature"):
        verify(BODY, headers, SECRET, now=NOW)


def test_missing_timestamp_header_refused() -> None:
    headers = signed_headers()
    del headers["X-Service-Timestamp"]

    with pytest.raises(MissingHeaderError, match="X-Service-Timestamp"):
        verify(BODY, headers, SECRET, now=NOW)


def test_old_timestamp_refused() -> None:
    with pytest.raises(TimestampOutOfToleranceError, match="too old"):
        verify(BODY, signed_headers(timestamp=NOW - 301), SECRET, now=NOW)


def test_future_timestamp_refused() -> None:
    with pytest.raises(TimestampOutOfToleranceError, match="future"):
        verify(BODY, signed_headers(timestamp=NOW + 301), SECRET, now=NOW)


def test_timestamp_at_tolerance_edge_accepted() -> None:
    assert verify(BODY, signed_headers(timestamp=NOW - 300), SECRET, now=NOW)


def test_custom_tolerance_applied() -> None:
    with pytest.raises(TimestampOutOfToleranceError):
        verify(BODY, signed_headers(timestamp=NOW - 61), SECRET, now=NOW, tolerance_s=60)


def test_tampered_body_refused() -> None:
    with pytest.raises(InvalidSignatureError, match="does not match"):
        verify(BODY.replace(b"ses_1", b"ses_2"), signed_headers(), SECRET, now=NOW)


def test_wrong_secret_refused() -> None:
    with pytest.raises(InvalidSignatureError):
        verify(BODY, signed_headers(), "whsec_" + "cd" * 32, now=NOW)


def test_secret_without_prefix_does_not_verify() -> None:
    # The HMAC key is the whole secret string, whsec_ included.
    with pytest.raises(InvalidSignatureError):
        verify(BODY, signed_headers(), SECRET.removeprefix("whsec_"), now=NOW)


def test_re_signed_timestamp_refused() -> None:
    headers = signed_headers()
    headers["X-Service-Timestamp"] = str(NOW + 1)

    with pytest.raises(InvalidSignatureError):
        verify(BODY, headers, SECRET, now=NOW)


def test_signature_without_scheme_refused() -> None:
    headers = signed_headers()
    headers["X-Service-Signature"] = headers["X-Service-Signature"].removeprefix("sha256=")

    with pytest.raises(InvalidSignatureError, match="sha256="):
        verify(BODY, headers, SECRET, now=NOW)


def test_non_ascii_signature_refused_without_type_error() -> None:
    headers = signed_headers()
    headers["X-Service-Signature"] = "sha256=" + "é" * 64

    with pytest.raises(InvalidSignatureError):
        verify(BODY, headers, SECRET, now=NOW)


@pytest.mark.parametrize("timestamp", ["12a", "", "+1800000000", "1_800_000_000", "١٨٠٠", "1e9"])
def test_non_integer_timestamp_refused(timestamp: str) -> None:
    headers = signed_headers()
    headers["X-Service-Timestamp"] = timestamp

    with pytest.raises(InvalidSignatureError, match="Unix seconds"):
        verify(BODY, headers, SECRET, now=NOW)


def test_signed_non_json_body_refused() -> None:
    body = b"not json"

    with pytest.raises(InvalidPayloadError):
        verify(body, signed_headers(body), SECRET, now=NOW)


def test_signed_json_array_refused() -> None:
    body = b"[1, 2]"

    with pytest.raises(InvalidPayloadError):
        verify(body, signed_headers(body), SECRET, now=NOW)


def test_every_refusal_is_a_verification_error() -> None:
    with pytest.raises(WebhookVerificationError):
        verify(BODY, {}, SECRET, now=NOW)


def test_module_imports_nothing_of_the_gateway() -> None:
    probe = (
        "import sys, rigway.webhooks; "
        "sys.exit(any(m.startswith(('rigway.gateway', 'rigway.agent')) for m in sys.modules))"
    )
    assert subprocess.run([sys.executable, "-c", probe], check=False).returncode == 0
