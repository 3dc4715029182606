"""The Rigway SDK: see and drive remote desktops ("rigs") through metered sessions.

```python
from rigway.client import Rigway

with Rigway() as client:  # arguments, else RIGWAY_API_KEY/_BASE_URL, else .rigway/local.json
    with client.sessions.create() as session:  # the one usable rig; always ends on exit
        screen = session.observe(max_width=1280)
        after = session.click(target="Username", settle=True, observe=True)
        session.type_text("hello")
        session.screenshot().save("shot.jpg")
```

Every acting method takes `settle=` and `observe=`, so one round trip acts, waits
for the screen to go still and looks at it (`after.observe`).

`AsyncRigway` is the same API with `await`; `RigwayConsole` / `AsyncRigwayConsole`
take the owner's console token for keys, webhooks, rig settings and owner kills.
Errors are in `rigway.client.errors`; computer-use adapters in
`rigway.client.computer_use`.
"""

from ._act_ops import ActOptions
from ._async import AsyncRigway, PendingAsyncSession
from ._async_session import AsyncSessionHandle
from ._console import AsyncRigwayConsole, RigwayConsole
from ._core import DEFAULT_BASE_URL, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from ._session import SessionHandle
from ._sync import Rigway
from .errors import (
    AmbiguousRigError,
    AmbiguousTargetError,
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    DesktopUnavailableError,
    ExpectationFailedError,
    FrameExpiredError,
    HostError,
    HostTimeoutError,
    InputStoppedError,
    InternalServerError,
    NoRigAvailableError,
    NotFoundError,
    OwnerActiveError,
    PermissionDeniedError,
    RateLimitError,
    RigBusyError,
    RigwayError,
    SessionEndedError,
    StaleFrameError,
    TargetGoneError,
    TargetNotFoundError,
    UnsupportedActionError,
)
from .models import (
    ActResult,
    AgentRelease,
    ApiKey,
    ApiKeyCreated,
    AppKillResult,
    AppLaunchResult,
    DirtyRects,
    Display,
    EventReceipt,
    InputEvent,
    InputResult,
    ObserveOptions,
    ObserveResult,
    ObserveText,
    ObserveTiming,
    PairingCode,
    Region,
    Rig,
    Screenshot,
    Session,
    Settle,
    SettleResult,
    StreamCredentials,
    Takeover,
    Target,
    TargetList,
    WaitResult,
    WaitTarget,
    WakeResult,
    Webhook,
    WebhookCreated,
)

# Another public name for a click target, `Target`.
GroundingTarget = Target

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "APIConnectionError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "ActOptions",
    "ActResult",
    "AgentRelease",
    "AmbiguousRigError",
    "AmbiguousTargetError",
    "ApiKey",
    "ApiKeyCreated",
    "AppKillResult",
    "AppLaunchResult",
    "AsyncRigway",
    "AsyncRigwayConsole",
    "AsyncSessionHandle",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "DesktopUnavailableError",
    "DirtyRects",
    "Display",
    "EventReceipt",
    "ExpectationFailedError",
    "FrameExpiredError",
    "GroundingTarget",
    "HostError",
    "HostTimeoutError",
    "InputEvent",
    "InputResult",
    "InputStoppedError",
    "InternalServerError",
    "NoRigAvailableError",
    "NotFoundError",
    "ObserveOptions",
    "ObserveResult",
    "ObserveText",
    "ObserveTiming",
    "OwnerActiveError",
    "PairingCode",
    "PendingAsyncSession",
    "PermissionDeniedError",
    "RateLimitError",
    "Region",
    "Rig",
    "RigBusyError",
    "Rigway",
    "RigwayConsole",
    "RigwayError",
    "Screenshot",
    "Session",
    "SessionEndedError",
    "SessionHandle",
    "Settle",
    "SettleResult",
    "StaleFrameError",
    "StreamCredentials",
    "Takeover",
    "Target",
    "TargetGoneError",
    "TargetList",
    "TargetNotFoundError",
    "UnsupportedActionError",
    "WaitResult",
    "WaitTarget",
    "WakeResult",
    "Webhook",
    "WebhookCreated",
]
