"""Release keys pinned at pairing: read from the gateway once, saved beside the token,
loaded at each start; anything that is not an Ed25519 key is refused, never skipped."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rigway.agent.updater import (
    UpdateRefused,
    fetch_release_keys,
    load_release_keys,
    release_keys_file,
    save_release_keys,
)
from rigway.releases.manifest import public_key_to_text

KEY_TEXT = public_key_to_text(Ed25519PrivateKey.generate().public_key())


def _gateway(status: int, body: object) -> httpx2.MockTransport:
    def handle(request: httpx2.Request) -> httpx2.Response:
        assert request.url.path == "/v1/agent/release-keys"
        return httpx2.Response(status, json=body)

    return httpx2.MockTransport(handle)


async def test_gateway_keys_are_read() -> None:
    keys = await fetch_release_keys(
        "https://gw.example/", transport=_gateway(200, {"keys": [KEY_TEXT]})
    )
    assert keys == [KEY_TEXT]


@pytest.mark.parametrize(
    ("status", "body"),
    [(404, {"error": "not_found"}), (200, {"keys": ["short"]}), (200, ["a list"])],
    ids=["404", "not-a-key", "not-an-object"],
)
async def test_unusable_gateway_answer_is_refused(status: int, body: object) -> None:
    with pytest.raises(UpdateRefused):
        await fetch_release_keys("https://gw.example", transport=_gateway(status, body))


def test_saved_keys_load_beside_the_token(tmp_path: Path) -> None:
    keys_file = release_keys_file(tmp_path / "rig-1.token")
    save_release_keys(keys_file, [KEY_TEXT])
    assert keys_file == tmp_path / "rig-1.release-keys"
    loaded = load_release_keys(keys_file)
    assert [public_key_to_text(key) for key in loaded] == [KEY_TEXT]


def test_no_keys_file_means_no_trusted_key(tmp_path: Path) -> None:
    assert load_release_keys(tmp_path / "absent.release-keys") == []


def test_damaged_keys_file_is_refused(tmp_path: Path) -> None:
    keys_file = tmp_path / "rig.release-keys"
    keys_file.write_text(KEY_TEXT + "\nnot-a-key\n")
    with pytest.raises(UpdateRefused, match="damaged"):
        load_release_keys(keys_file)
