"""`create_app`: the one place that wires the gateway together."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from sqlalchemy.exc import InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as SqlAlchemyTimeoutError
from sqlalchemy.ext.asyncio import AsyncSession as DbSession
from sqlalchemy.ext.asyncio import async_sessionmaker
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import Scope

from rigway import __version__
from rigway.gateway.accounts.service import AccountService
from rigway.gateway.api_docs.document import (
    API_DESCRIPTION,
    OPENAPI_TAGS,
    restore_example_nulls,
)
from rigway.gateway.api_docs.routes import router as api_docs_router
from rigway.gateway.api_keys.routes import router as keys_router
from rigway.gateway.api_keys.service import KeyService
from rigway.gateway.auth.api_key_auth import ApiKeyAuthenticator
from rigway.gateway.auth.console_tokens import (
    ConsoleTokenVerifier,
    JwksSource,
    JwksUrlSource,
    StaticJwksSource,
)
from rigway.gateway.clock import Clock, SystemClock
from rigway.gateway.cluster.forwarding import ForwardToHolder, forward
from rigway.gateway.cluster.ownership import ownership_for
from rigway.gateway.cluster.peer_link import PeerClients
from rigway.gateway.cluster.routes import router as peer_router
from rigway.gateway.console.routes import router as console_router
from rigway.gateway.db.engine import apply_migrations, create_engine, session_factory
from rigway.gateway.desktop.body_limit import input_body_limit
from rigway.gateway.desktop.frames import FrameRegistry
from rigway.gateway.desktop.routes import router as desktop_router
from rigway.gateway.desktop.routes import send_input
from rigway.gateway.desktop.service import DesktopService
from rigway.gateway.draining import CountRequestsInFlight
from rigway.gateway.errors import (
    ApiError,
    InvalidApiKey,
    ServiceUnavailable,
    api_error_response,
    internal_error_response,
)
from rigway.gateway.health_and_metrics import router as health_and_metrics_router
from rigway.gateway.hostlink.registry import HostRegistry
from rigway.gateway.hostlink.routes import router as hostlink_router
from rigway.gateway.identity.passwords import Passwords
from rigway.gateway.identity.routes import router as identity_router
from rigway.gateway.identity.service import IdentityProvider
from rigway.gateway.identity.signing_keys import load_or_create_signing_key, load_signing_key
from rigway.gateway.middleware import BodyLimitMiddleware, RequestIdMiddleware, RouteBodyLimit
from rigway.gateway.notices import API_KEY_FORGOTTEN, RIG_UNPAIRED, SESSION_ENDED, notices_for
from rigway.gateway.observability import (
    GatewayMetrics,
    RequestMetricsMiddleware,
    add_scrape_time_counts,
)
from rigway.gateway.ratelimit import RateLimits
from rigway.gateway.recordings.recorder import Recorder
from rigway.gateway.recordings.routes import console_router as recordings_console_router
from rigway.gateway.recordings.routes import router as recordings_router
from rigway.gateway.recordings.service import RecordingService
from rigway.gateway.recordings.tasks import RecordingCleaner
from rigway.gateway.releases.routes import router as releases_router
from rigway.gateway.rigs.owner import RigOwnerActions
from rigway.gateway.rigs.routes import agent_router
from rigway.gateway.rigs.routes import console_router as rigs_console_router
from rigway.gateway.rigs.routes import router as rigs_router
from rigway.gateway.rigs.service import RigService
from rigway.gateway.secret_box import SecretBox
from rigway.gateway.services import Services, services_of
from rigway.gateway.sessions.routes import router as sessions_router
from rigway.gateway.sessions.service import SessionService
from rigway.gateway.sessions.tasks import SessionTimers
from rigway.gateway.settings import GatewaySettings
from rigway.gateway.stream.routes import router as stream_router
from rigway.gateway.stream.service import StreamService
from rigway.gateway.stream.tokens import link_tokens
from rigway.gateway.takeover.routes import router as takeover_router
from rigway.gateway.takeover.service import TakeoverService
from rigway.gateway.webhooks.routes import router as webhooks_router
from rigway.gateway.webhooks.service import WebhookService
from rigway.gateway.webhooks.ssrf import SystemResolver
from rigway.gateway.webhooks.tasks import WebhookDispatcher

logger = logging.getLogger(__name__)


def build_services(
    settings: GatewaySettings, clock: Clock, passwords: Passwords | None = None
) -> Services:
    settings.state_dir.mkdir(parents=True, exist_ok=True)
    engine = create_engine(settings.resolved_database_url())
    db = session_factory(engine)
    registry = HostRegistry()
    sessions = SessionService(db, registry, clock, settings)
    rigs = RigService(
        db,
        clock,
        is_online=registry.is_online,
        active_session_for=lambda rig_id: getattr(sessions.live.for_rig(rig_id), "id", None),
        pairing_code_ttl_s=settings.pairing_code_ttl_s,
        desktop_state_of=registry.desktop_state,
        displays_of=registry.displays,
    )
    api_keys = ApiKeyAuthenticator(db, clock)
    notices = notices_for(settings.redis_url)
    ownership = ownership_for(settings.redis_url, settings.node_url)
    sessions.holder_url = ownership.holder_url
    rigs.held_elsewhere = ownership.held_elsewhere
    rigs.holder_url = ownership.holder_url
    rigs.holder_urls = sessions.holder_urls = ownership.holder_urls
    sessions.on_ended_here = lambda session_id, rig_id, reason: notices.publish(
        SESSION_ENDED, {"session_id": session_id, "rig_id": rig_id, "reason": reason}
    )
    notices.on(SESSION_ENDED, sessions.note_ended_elsewhere)
    # A key revoked or created on one node is forgotten by every node at once.
    api_keys.on_forget = lambda prefix: notices.publish(API_KEY_FORGOTTEN, {"prefix": prefix})
    notices.on(API_KEY_FORGOTTEN, lambda body: api_keys.forget_here(str(body.get("prefix"))))
    notices.on_resubscribed(api_keys.forget_all)
    rate_limits = RateLimits(settings, clock)
    identity, console_tokens = _console_auth(settings, clock, db, rate_limits, passwords)
    secret_key_file = settings.secret_key_file or settings.state_dir / "secret.key"
    box = SecretBox.from_file(secret_key_file)
    secret_key = secret_key_file.read_bytes().strip()
    # Several nodes: the one-time links' keys derive from the shared secret key.
    stream_tokens, takeover_tokens = link_tokens(clock.now, secret_key, settings.redis_url)
    resolver = SystemResolver()
    dispatcher = WebhookDispatcher(
        db,
        clock,
        box,
        resolver,
        allow_private=settings.webhook_allow_private_targets,
        ca_bundle=settings.webhook_ca_bundle,
        poll_interval_s=settings.webhook_poll_interval_s,
    )
    sessions.on_events_written = dispatcher.notify
    stream = StreamService(
        sessions.live, registry, settings, clock, stream_tokens, ownership.holder_url
    )
    sessions.on_session_ended.append(stream.on_session_ended)
    frames = FrameRegistry()

    async def forget_frames(session_id: str) -> None:
        frames.forget_session(session_id)

    sessions.on_session_ended.append(forget_frames)
    recorder = Recorder(
        db,
        clock,
        max_bytes=settings.recording_max_bytes,
        max_steps=settings.recording_max_steps,
    )
    sessions.on_session_ended.append(recorder.forget)
    recordings = RecordingService(db, clock, settings, sessions, recorder)
    desktop = DesktopService(sessions, registry, settings, frames, recorder)
    takeover = TakeoverService(sessions, desktop, stream, settings, clock, takeover_tokens)
    sessions.on_session_ended.append(takeover.on_session_ended)
    rig_owner = RigOwnerActions(
        rigs,
        sessions,
        registry,
        wake_broadcast=settings.wake_broadcast,
        host_timeout_s=settings.host_timeout_s,
    )
    # A rig unpaired on one node loses its link on the node holding it.
    rig_owner.on_unpaired = lambda rig_id: notices.publish(RIG_UNPAIRED, {"rig_id": rig_id})
    notices.on(RIG_UNPAIRED, rig_owner.note_unpaired)
    services = Services(
        settings=settings,
        clock=clock,
        engine=engine,
        db=db,
        registry=registry,
        api_keys=api_keys,
        keys=KeyService(db, clock, api_keys),
        accounts=AccountService(db, clock),
        rate_limits=rate_limits,
        rigs=rigs,
        sessions=sessions,
        timers=SessionTimers(sessions, settings),
        desktop=desktop,
        frames=frames,
        console_tokens=console_tokens,
        identity=identity,
        webhooks=WebhookService(
            db,
            clock,
            box,
            resolver,
            allow_private=settings.webhook_allow_private_targets,
            max_per_account=settings.webhook_max_per_account,
        ),
        webhook_dispatcher=dispatcher,
        rig_owner=rig_owner,
        stream=stream,
        notices=notices,
        ownership=ownership,
        peers=PeerClients(secret_key),
        metrics=GatewayMetrics(settings.resolved_node_name()),
        takeover=takeover,
        recorder=recorder,
        recordings=recordings,
        recording_cleaner=RecordingCleaner(recordings, settings.recording_cleanup_interval_s),
    )
    add_scrape_time_counts(services.metrics, services)
    return services


def _console_auth(
    settings: GatewaySettings,
    clock: Clock,
    db: async_sessionmaker[DbSession],
    rate_limits: RateLimits,
    passwords: Passwords | None,
) -> tuple[IdentityProvider | None, ConsoleTokenVerifier]:
    """The embedded identity provider, or an external one named by its JWKS URL."""
    issuer = settings.resolved_console_issuer()
    identity = None
    source: JwksSource
    if settings.console_jwks_url is None:
        identity = IdentityProvider(
            db,
            clock,
            (
                load_or_create_signing_key(settings.state_dir)
                if settings.console_signing_key_file is None
                else load_signing_key(settings.console_signing_key_file)
            ),
            issuer=issuer,
            audience=settings.console_audience,
            token_ttl_s=settings.console_token_ttl_s,
            rate_limits=rate_limits,
            passwords=passwords,
        )
        source = StaticJwksSource(identity.jwks())
    else:
        source = JwksUrlSource(settings.console_jwks_url)
    verifier = ConsoleTokenVerifier(
        issuer,
        settings.console_audience,
        source,
        account_claim=settings.console_account_claim,
        now=clock.now,
    )
    return identity, verifier


def create_app(
    settings: GatewaySettings, *, clock: Clock | None = None, passwords: Passwords | None = None
) -> FastAPI:
    """The gateway. `clock` and `passwords` (the console's password hashing) default to
    the real ones; tests pass their own (a clock they move, a cheaper Argon2)."""
    services = build_services(settings, clock if clock is not None else SystemClock(), passwords)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        await apply_migrations(services.engine)
        if not services.ownership.is_shared:
            # One node: every active session is its own; orphan timers for their hosts.
            # Several: each node takes a session when its host links there, and the
            # sweeper ends those no node holds, so starting a node ends nobody's session.
            orphans = await services.sessions.load_active()
            services.timers.adopt_orphans(orphans)
        await services.notices.start()
        await services.ownership.start()
        services.timers.start(
            routing_healthy=services.ownership.is_healthy if services.ownership.is_shared else None
        )
        services.webhook_dispatcher.start()
        services.recording_cleaner.start()
        try:
            yield
        finally:
            await services.timers.stop()
            await services.webhook_dispatcher.stop()
            await services.stream.close_all()
            await services.registry.close_all()
            await services.sessions.drain()
            await services.sessions.flush_activity()
            await services.recording_cleaner.stop()
            await services.recorder.stop()
            await services.rate_limits.close()
            await services.notices.stop()
            await services.peers.close()
            await services.ownership.stop()
            await services.engine.dispose()

    app = FastAPI(
        title="Rigway API",
        version="1.1.0",
        summary=f"See and drive real desktops (gateway {__version__})",
        description=API_DESCRIPTION,
        openapi_tags=OPENAPI_TAGS,
        lifespan=lifespan,
        # FastAPI's OpenTelemetry hooks look for configured providers on every request
        # (environment lookups included), 4 % of the gateway's CPU on a screenshot
        # (bench/screenshot_cpu.py), and the gateway configures no OpenTelemetry provider.
        telemetry={"tracing": False, "metrics": False, "logs": False},
        # FastAPI's own /docs and /redoc load their scripts from a CDN; api_docs serves
        # the same pages with the scripts from the gateway (they render offline).
        docs_url=None,
        redoc_url=None,
        # Operation ids are the route functions' names (`create_session`, `screenshot`),
        # not FastAPI's name+path+method, so generated clients read well.
        generate_unique_id_function=_operation_id,
    )
    app.state.services = services
    _install_error_handlers(app, services.metrics)
    for router in (
        api_docs_router,
        health_and_metrics_router,
        rigs_router,
        rigs_console_router,
        agent_router,
        releases_router,
        sessions_router,
        desktop_router,
        recordings_router,
        recordings_console_router,
        keys_router,
        webhooks_router,
        identity_router,
        hostlink_router,
        peer_router,
        # Before the console: its catch-all would shadow /console/stream/{id}.
        stream_router,
        takeover_router,
        console_router,
    ):
        app.include_router(router)
    _declare_400_not_422(app)
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=settings.max_body_bytes,
        routes=_own_body_limits(settings, services.api_keys),
    )
    app.add_middleware(RequestIdMiddleware)
    app.add_middleware(CountRequestsInFlight, tracker=services.requests_in_flight)
    app.add_middleware(RequestMetricsMiddleware, metrics=services.metrics)
    return app


def _operation_id(route: APIRoute) -> str:
    return route.name


def _own_body_limits(
    settings: GatewaySettings, api_keys: ApiKeyAuthenticator
) -> list[RouteBodyLimit]:
    """An input batch may need far more than the general limit (up to 100 events of
    10,000 characters each): the input route's limit follows the batch's bounds, never
    below the general one, for callers with a valid API key (FastAPI reads a body before
    the route's own authentication runs). The path is the route's own (its router is
    included without a prefix), so the two cannot drift apart."""
    input_max_bytes = input_body_limit(settings.max_body_bytes)
    limits = [
        RouteBodyLimit(
            frozenset(route.methods or ()),
            route.path_regex,
            input_max_bytes,
            admits=_holds_an_api_key(api_keys),
        )
        for route in desktop_router.routes
        if isinstance(route, APIRoute) and route.endpoint is send_input
    ]
    if not limits:
        raise RuntimeError("the input route is not on the desktop router")
    return limits


def _holds_an_api_key(api_keys: ApiKeyAuthenticator) -> Callable[[Scope], Awaitable[bool]]:
    async def admits(scope: Scope) -> bool:
        header = dict(scope["headers"]).get(b"authorization")
        try:
            await api_keys.authenticate(None if header is None else header.decode("latin-1"))
        except InvalidApiKey:
            return False
        except Exception:
            # Not admitted is the safe side: the body keeps the general limit, and a
            # body within it reaches the route, which reports the store's failure.
            logger.exception("API key check before a large input body failed")
            return False
        return True

    return admits


def _declare_400_not_422(app: FastAPI) -> None:
    """FastAPI documents 422 for every validated route; this gateway answers 400
    `invalid_request` instead (declared by `error_responses`), so drop the 422s. And
    put back the nulls FastAPI's encoding drops from the examples."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = FastAPI.openapi(app)
            for operations in schema.get("paths", {}).values():
                for operation in operations.values():
                    operation.get("responses", {}).pop("422", None)
            for unused in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(unused, None)
            restore_example_nulls(schema)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def _install_error_handlers(app: FastAPI, metrics: GatewayMetrics) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(_request: Request, exc: ApiError) -> JSONResponse:
        metrics.count_error(exc.status, exc.code)
        return api_error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(_request: Request, exc: RequestValidationError) -> JSONResponse:
        metrics.count_error(400, "invalid_request")
        return JSONResponse({"error": f"invalid_request: {_describe(exc)}"}, status_code=400)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {404: "not_found", 405: "method_not_allowed"}
        code = codes.get(exc.status_code, "invalid_request")
        metrics.count_error(exc.status_code, code)
        return JSONResponse(
            {"error": f"{code}: {exc.detail}"}, status_code=exc.status_code, headers=exc.headers
        )

    # The store unreachable (PostgreSQL down, restarting, or out of connections): a 503
    # the client may retry, never a 500; the engine's pre-ping reconnects by itself.
    @app.exception_handler(OperationalError)
    @app.exception_handler(InterfaceError)
    @app.exception_handler(SqlAlchemyTimeoutError)
    @app.exception_handler(ConnectionError)
    async def _store_unavailable(_request: Request, exc: Exception) -> JSONResponse:
        logger.warning("store unavailable: %s", exc)
        return await _api_error(
            _request, ServiceUnavailable("the store cannot be reached; retry shortly")
        )

    @app.exception_handler(ForwardToHolder)
    async def _forward(request: Request, signal: ForwardToHolder) -> Response:
        services = services_of(request)
        hops: list[str] = []

        def observe(seconds: float, outcome: str) -> None:
            hops.append(outcome)
            services.metrics.observe_forward(seconds, outcome)

        answered = False
        try:
            response = await forward(
                request, signal, services.peers, services.ownership.holder_url, observe
            )
            answered = response.status_code < 400 and hops == ["ok"]
            return response
        finally:
            if not answered and signal.session_id is not None:
                # Ended there, moved, or unreachable: the next request looks it up anew.
                services.sessions.holder_routes.forget(signal.session_id)

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error", exc_info=exc)
        metrics.count_error(500, "internal_error")
        return internal_error_response()


def _describe(exc: RequestValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return "invalid request"
    first = errors[0]
    location = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
    message = str(first.get("msg", "invalid"))
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{location}: {message}{more}"[:500] if location else f"{message}{more}"[:500]
