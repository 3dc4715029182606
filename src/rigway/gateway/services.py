"""The gateway's services, built once by `create_app` and reached by routes through
`request.app.state.services`: a route names the one service it uses as a typed
dependency (`KeyServiceDep`), older routes still call `services_of` (decision 0015)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker
from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from starlette.requests import HTTPConnection

from rigway.gateway.accounts.service import AccountService
from rigway.gateway.api_keys.service import KeyService
from rigway.gateway.auth.api_key_auth import ApiKeyAuthenticator
from rigway.gateway.auth.console_tokens import ConsoleTokenVerifier
from rigway.gateway.clock import Clock
from rigway.gateway.cluster.ownership import RigOwnership
from rigway.gateway.cluster.peer_link import PeerClients
from rigway.gateway.desktop.frames import FrameRegistry
from rigway.gateway.desktop.service import DesktopService
from rigway.gateway.draining import RequestsInFlight
from rigway.gateway.hostlink.registry import HostRegistry
from rigway.gateway.identity.service import IdentityProvider
from rigway.gateway.notices import Notices
from rigway.gateway.observability import GatewayMetrics
from rigway.gateway.ratelimit import RateLimits
from rigway.gateway.recordings.recorder import Recorder
from rigway.gateway.recordings.service import RecordingService
from rigway.gateway.recordings.tasks import RecordingCleaner
from rigway.gateway.rigs.owner import RigOwnerActions
from rigway.gateway.rigs.service import RigService
from rigway.gateway.sessions.service import SessionService
from rigway.gateway.sessions.tasks import SessionTimers
from rigway.gateway.settings import GatewaySettings
from rigway.gateway.stream.service import StreamService
from rigway.gateway.takeover.service import TakeoverService
from rigway.gateway.webhooks.service import WebhookService
from rigway.gateway.webhooks.tasks import WebhookDispatcher


@dataclass
class Services:
    settings: GatewaySettings
    clock: Clock
    engine: AsyncEngine
    db: async_sessionmaker[DbSession]
    registry: HostRegistry
    api_keys: ApiKeyAuthenticator
    keys: KeyService
    accounts: AccountService
    rate_limits: RateLimits
    rigs: RigService
    sessions: SessionService
    timers: SessionTimers
    desktop: DesktopService
    frames: FrameRegistry
    console_tokens: ConsoleTokenVerifier
    identity: IdentityProvider | None
    webhooks: WebhookService
    webhook_dispatcher: WebhookDispatcher
    rig_owner: RigOwnerActions
    stream: StreamService
    takeover: TakeoverService
    recorder: Recorder
    recordings: RecordingService
    recording_cleaner: RecordingCleaner
    metrics: GatewayMetrics
    notices: Notices
    ownership: RigOwnership
    peers: PeerClients
    extras: dict[str, Any] = field(default_factory=dict)
    requests_in_flight: RequestsInFlight = field(default_factory=RequestsInFlight)


def services_of(connection: HTTPConnection) -> Services:
    services = connection.app.state.services
    assert isinstance(services, Services)
    return services


# Dependencies are async so FastAPI calls them on the event loop, not in its thread pool.
async def key_service(request: Request) -> KeyService:
    return services_of(request).keys


KeyServiceDep = Annotated[KeyService, Depends(key_service)]
