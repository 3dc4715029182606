"""The Rigway SDK: see and drive remote desktops ("rigs") through metered sessions.

```python
from rigway.client import Rigway

with Rigway() as client:  # RIGWAY_API_KEY, RIGWAY_BASE_URL
    rig = client.rigs.list()[0]
    with client.sessions.create(rig_id=rig.id) as session:  # always ends on exit
        shot = session.screenshot(max_width=1280)
        session.click(*shot.to_native(640, 360))
        session.type_text("hello")
```

`AsyncRigway` is the same API with `await`; `RigwayConsole` / `AsyncRigwayConsole`
take the owner's console token for keys, webhooks, rig settings and owner kills.
Errors are in `rigway.client.errors`; computer-use adapters in
`rigway.client.computer_use`.
"""

from ._async import AsyncRigway, PendingAsyncSession
from ._console import AsyncRigwayConsole, RigwayConsole
from ._core import DEFAULT_BASE_URL, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT
from ._session import AsyncSessionHandle, SessionHandle
from ._sync import Rigway
from .errors import (
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    HostError,
    HostTimeoutError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RigwayError,
    SessionEndedError,
    TargetNotFoundError,
    UnsupportedActionError,
)
from .models import (
    AgentRelease,
    ApiKey,
    ApiKeyCreated,
    AppKillResult,
    AppLaunchResult,
    DirtyRects,
    InputEvent,
    InputResult,
    ObserveResult,
    ObserveText,
    ObserveTiming,
    PairingCode,
    Region,
    Rig,
    Screenshot,
    Session,
    StreamCredentials,
    Target,
    TargetList,
    WakeResult,
    Webhook,
    WebhookCreated,
)

# The spec's name for a click target.
GroundingTarget = Target

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_TIMEOUT",
    "APIConnectionError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AgentRelease",
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
    "DirtyRects",
    "GroundingTarget",
    "HostError",
    "HostTimeoutError",
    "InputEvent",
    "InputResult",
    "InternalServerError",
    "NotFoundError",
    "ObserveResult",
    "ObserveText",
    "ObserveTiming",
    "PairingCode",
    "PendingAsyncSession",
    "PermissionDeniedError",
    "RateLimitError",
    "Region",
    "Rig",
    "Rigway",
    "RigwayConsole",
    "RigwayError",
    "Screenshot",
    "Session",
    "SessionEndedError",
    "SessionHandle",
    "StreamCredentials",
    "Target",
    "TargetList",
    "TargetNotFoundError",
    "UnsupportedActionError",
    "WakeResult",
    "Webhook",
    "WebhookCreated",
]
