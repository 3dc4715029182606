"""Every field the gateway answers with is declared on the SDK model that reads it, so
users get it typed and completed instead of through `model_extra`; and a screenshot
saves itself."""

from __future__ import annotations

from pathlib import Path

import pydantic
import pytest

from rigway.client import (
    ActResult,
    AgentRelease,
    ApiKey,
    ApiKeyCreated,
    AppKillResult,
    AppLaunchResult,
    DirtyRects,
    Display,
    EventReceipt,
    ObserveResult,
    ObserveText,
    ObserveTiming,
    PairingCode,
    Rig,
    Screenshot,
    Session,
    SettleResult,
    StreamCredentials,
    Takeover,
    Target,
    TargetList,
    WaitResult,
    WakeResult,
    Webhook,
    WebhookCreated,
)
from rigway.client._screen_models import ObserveMark, TargetsDiff
from rigway.gateway.api_keys.schemas import ApiKeyCreatedOut, ApiKeyOut
from rigway.gateway.desktop import schemas as desktop
from rigway.gateway.releases.routes import AgentReleaseOut
from rigway.gateway.rigs.schemas import DisplayOut, PairingCodeOut, RigOut, WakeOut
from rigway.gateway.sessions.schemas import SessionOut
from rigway.gateway.stream.service import StreamCredentialsOut
from rigway.gateway.takeover.schemas import TakeoverOut
from rigway.gateway.webhooks.schemas import WebhookCreatedOut, WebhookOut

# The SDK model that decodes each JSON answer of the gateway, beside the gateway's model
# of that answer (tests may import the gateway; the SDK itself never does).
DECODED_AS: list[tuple[type[pydantic.BaseModel], type[pydantic.BaseModel]]] = [
    (EventReceipt, desktop.EventReceiptOut),
    (SettleResult, desktop.SettleOut),
    (ActResult, desktop.InputBatchOut),
    (WaitResult, desktop.WaitOut),
    (Target, desktop.TargetOut),
    (TargetList, desktop.TargetsOut),
    (DirtyRects, desktop.DirtyOut),
    (ObserveText, desktop.ObserveTextOut),
    (ObserveTiming, desktop.ObserveTimingOut),
    (ObserveMark, desktop.MarkOut),
    (TargetsDiff, desktop.TargetsDiffOut),
    (ObserveResult, desktop.ObserveOut),
    (AppLaunchResult, desktop.AppLaunchOut),
    (AppKillResult, desktop.AppKillOut),
    (Display, DisplayOut),
    (Rig, RigOut),
    (WakeResult, WakeOut),
    (PairingCode, PairingCodeOut),
    (AgentRelease, AgentReleaseOut),
    (Session, SessionOut),
    (StreamCredentials, StreamCredentialsOut),
    (Takeover, TakeoverOut),
    (ApiKey, ApiKeyOut),
    (ApiKeyCreated, ApiKeyCreatedOut),
    (Webhook, WebhookOut),
    (WebhookCreated, WebhookCreatedOut),
]


def wire_names(model: type[pydantic.BaseModel]) -> set[str]:
    return {field.alias or name for name, field in model.model_fields.items()}


@pytest.mark.parametrize(
    ("sdk_model", "gateway_model"), DECODED_AS, ids=[sdk.__name__ for sdk, _ in DECODED_AS]
)
def test_every_answer_field_is_declared(
    sdk_model: type[pydantic.BaseModel], gateway_model: type[pydantic.BaseModel]
) -> None:
    assert wire_names(gateway_model) - wire_names(sdk_model) == set()


def test_viewer_url_is_a_declared_field() -> None:
    credentials = StreamCredentials.model_validate(
        {
            "signaling_url": "ws://g/v1/stream/signal",
            "viewer_token": "t",
            "rig_id": "rig_1",
            "viewer_url": "http://g/v1/stream/view?token=t",
        }
    )
    assert credentials.viewer_url == "http://g/v1/stream/view?token=t"
    assert credentials.model_extra == {}


def test_screenshot_save_writes_the_jpeg(tmp_path: Path) -> None:
    shot = Screenshot(jpeg=b"\xff\xd8jpeg", width=2, height=2, native_width=2, native_height=2)
    written = shot.save(tmp_path / "shot.jpg")
    assert written == tmp_path / "shot.jpg"
    assert written.read_bytes() == b"\xff\xd8jpeg"


def test_screenshot_save_takes_a_string_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Screenshot(jpeg=b"x", width=1, height=1, native_width=1, native_height=1).save("a.jpg")
    assert (tmp_path / "a.jpg").read_bytes() == b"x"
