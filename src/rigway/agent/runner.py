"""The one place that builds a running host agent from settings and a desktop.

Settings are built once by the caller (the CLI) and passed in; nothing here reads the
environment. `open_backend` picks the platform, importing it only when chosen, so a
rig installs only its own backend's dependencies.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import ipaddress
import logging
import os
import platform
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

import psutil

from rigway import __version__
from rigway.agent.accessibility import AccessibilityService
from rigway.agent.apps import AppTracker, ProcessTracker
from rigway.agent.backends.base import Desktop, WalkBudget
from rigway.agent.desktop_state import DEFAULT_SAMPLE_INTERVAL_S, DesktopStateReporter
from rigway.agent.dispatch import Dispatcher
from rigway.agent.displays import DEFAULT_INTERVAL_S as DISPLAYS_INTERVAL_S
from rigway.agent.displays import DisplaysReporter, read_displays
from rigway.agent.held_input_journal import HeldInputJournal
from rigway.agent.jpeg_strips import StripEncoder
from rigway.agent.link import AgentLink
from rigway.agent.owner_presence import OwnerPresence, OwnerPresenceReporter
from rigway.agent.reduce_motion import MotionReducer
from rigway.agent.safety import InputGuard
from rigway.agent.screen import ScreenService
from rigway.agent.stream import StreamControl, StreamSettings
from rigway.agent.worker import SerialWorker
from rigway.protocol.messages import PROTOCOL_VERSION, Hello

__all__ = [
    "BACKENDS",
    "CONNECT_PATH",
    "AgentSettings",
    "build_hello",
    "connect_url",
    "detect_gpu",
    "detect_network",
    "detect_os",
    "open_backend",
    "open_streams",
    "run_agent",
]

_log = logging.getLogger(__name__)

CONNECT_PATH = "/v1/agent/connect"
BACKENDS: tuple[str, ...] = ("sim", "x11", "windows")
_WS_SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}
_GPU_VENDORS = {"0x10de": "NVIDIA", "0x1002": "AMD", "0x8086": "Intel"}


@dataclass(frozen=True, slots=True)
class AgentSettings:
    gateway_url: str  # http(s):// base of the gateway, or the ws(s):// connect URL
    rig_token: str
    # Other nodes of the same service, tried in turn after gateway_url when the node
    # in use cannot be reached or drops the link (or give one load-balanced URL).
    fallback_gateway_urls: tuple[str, ...] = ()
    backend: str = "sim"
    display: str | None = None
    width: int = 1920
    height: int = 1080
    heartbeat_interval_s: float = 5.0
    session_grace_s: float = 10.0
    max_walk_elements: int = 500
    walk_deadline_s: float = 1.5
    # Threads that encode a screenshot's JPEG strips; None: one per CPU, at most 4.
    encode_threads: int | None = None
    # How often the desktop state is sampled while connected (changes go to the gateway).
    desktop_state_interval_s: float = DEFAULT_SAMPLE_INTERVAL_S
    # How often the monitors are read while connected (changes go to the gateway).
    displays_interval_s: float = DISPLAYS_INTERVAL_S
    stream: StreamSettings = field(default_factory=StreamSettings)
    # File naming the keys and buttons held now, so the next start releases what a
    # killed agent left down (Windows keeps them down); None: no journal.
    held_input_journal: Path | None = None
    # The desktop's UI animations off while an API session is live (`reduce_motion.py`).
    reduce_motion: bool = False

    def __post_init__(self) -> None:
        # Fail closed at start-up, with a message, rather than misbehave later.
        if self.rig_token.strip() == "":
            raise ValueError("no rig token: pair this rig first")
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}; choose one of {BACKENDS}")
        if self.heartbeat_interval_s <= 0 or self.session_grace_s < 0:
            raise ValueError("heartbeat_interval_s must be > 0 and session_grace_s >= 0")
        if self.max_walk_elements < 1 or self.walk_deadline_s <= 0:
            raise ValueError("max_walk_elements must be >= 1 and walk_deadline_s > 0")
        if self.encode_threads is not None and self.encode_threads < 1:
            raise ValueError("encode_threads must be >= 1")
        if self.desktop_state_interval_s <= 0:
            raise ValueError("desktop_state_interval_s must be > 0")
        if self.displays_interval_s <= 0:
            raise ValueError("displays_interval_s must be > 0")
        for url in (self.gateway_url, *self.fallback_gateway_urls):
            connect_url(url)


def connect_url(gateway_url: str) -> str:
    """`https://gw.example` → `wss://gw.example/v1/agent/connect` (ws(s) kept as given)."""
    parts = urlsplit(gateway_url.strip())
    scheme = _WS_SCHEMES.get(parts.scheme.lower())
    if scheme is None or parts.netloc == "":
        raise ValueError(f"gateway URL {gateway_url!r} must be http(s):// or ws(s)://host")
    path = parts.path.rstrip("/")
    if not path.endswith(CONNECT_PATH):
        path += CONNECT_PATH
    return urlunsplit((scheme, parts.netloc, path, parts.query, ""))


def open_backend(name: str, *, display: str | None, width: int, height: int) -> Desktop:
    """The named platform desktop; `width`/`height` size the sim only."""
    if name == "sim":
        from rigway.agent.backends.sim import SimDesktop

        return SimDesktop(width=width, height=height)
    if name == "x11":
        try:
            from rigway.agent.backends.x11 import open_x11_desktop
        except ImportError as exc:
            raise ValueError(f"the x11 backend cannot load ({exc}); install rigway[x11]") from exc
        # Raises X11UnavailableError (no DISPLAY, no server) with the reason.
        return open_x11_desktop(display)
    if name == "windows":
        return cast(Desktop, _backend_opener("windows", "open_windows_desktop")())
    raise ValueError(f"unknown backend {name!r}; choose one of {BACKENDS}")


def _backend_opener(package: str, function: str) -> Callable[..., Any]:
    # Imported by name: the module exists only on the platform it is for.
    try:
        module = importlib.import_module(f"rigway.agent.backends.{package}")
    except ImportError as exc:
        raise ValueError(
            f"the {package} backend cannot load on this machine ({exc}); install rigway[{package}]"
        ) from exc
    opener = getattr(module, function, None)
    if not callable(opener):
        raise ValueError(f"the {package} backend has no {function}()")
    return cast(Callable[..., Any], opener)


async def run_agent(
    settings: AgentSettings,
    desktop: Desktop,
    *,
    stop: asyncio.Event | None = None,
    apps: AppTracker | None = None,
    on_link: Callable[[AgentLink], object] | None = None,
) -> None:
    """Serve the gateway until `stop` is set or the link fails fatally (raised).

    `on_link` receives the link once built, for callers that ask the gateway
    themselves (a tray's "end session" sends `session/owner_kill` through it). On the
    way out the local session ends (held input released, launched apps killed, new
    windows closed). The desktop stays open: its opener closes it.
    """
    # One thread per backend role. Daemon threads (SerialWorker): a pool's threads are
    # joined at interpreter exit, so a walk or grab stuck in a backend would hold the
    # exit hostage even after shutdown(wait=False).
    input_worker = SerialWorker("rigway-input")
    screen_worker = SerialWorker("rigway-screen")
    a11y_worker = SerialWorker("rigway-a11y")
    budget = WalkBudget(settings.max_walk_elements, settings.walk_deadline_s)
    # The screen worker encodes too; the rest are helpers.
    encoder = StripEncoder(helpers=encode_thread_count(settings.encode_threads) - 1)
    screen = ScreenService(desktop, screen_worker, encoder)
    journal = settings.held_input_journal
    guard = InputGuard(desktop, None if journal is None else HeldInputJournal(journal))
    presence = OwnerPresence(desktop)
    dispatcher = Dispatcher(
        desktop,
        screen,
        AccessibilityService(desktop, a11y_worker, budget),
        guard,
        ProcessTracker() if apps is None else apps,
        input_executor=input_worker,
        streams=open_streams(settings.stream, screen),
        presence=presence,
        motion=MotionReducer(desktop, enabled=settings.reduce_motion),
    )
    try:
        # Before any session's input: let go of what a killed predecessor left down.
        await input_worker.call(guard.release_left_over)
        link = AgentLink(
            [connect_url(url) for url in (settings.gateway_url, *settings.fallback_gateway_urls)],
            settings.rig_token,
            await build_hello(settings, desktop, await screen.native_size()),
            dispatcher,
            heartbeat_interval_s=settings.heartbeat_interval_s,
            session_grace_s=settings.session_grace_s,
            desktop_states=DesktopStateReporter(
                desktop, interval_s=settings.desktop_state_interval_s
            ),
            displays=DisplaysReporter(desktop, interval_s=settings.displays_interval_s),
            owner_presence=OwnerPresenceReporter(presence),
        )
        if on_link is not None:
            on_link(link)
        await _run_until_stopped(link, stop)
    finally:
        await dispatcher.end_local_session("agent_stopped")
        await dispatcher.close()
        input_worker.shutdown(wait=True)
        # A backend stuck in a walk or a grab must not hold the agent's exit hostage.
        screen_worker.shutdown(wait=False, cancel_futures=True)
        encoder.close()
        a11y_worker.shutdown(wait=False, cancel_futures=True)


MAX_ENCODE_THREADS = 4


def encode_thread_count(configured: int | None) -> int:
    """Threads for JPEG strips: as configured, else one per CPU up to 4 (a 1080p frame
    has 17 strips; past four threads the hand-offs cost what the split saves)."""
    if configured is not None:
        return configured
    # The CPUs this process may run on (affinity, a container's cpuset), where known.
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(usable or 1, MAX_ENCODE_THREADS))


def open_streams(settings: StreamSettings, screen: ScreenService) -> StreamControl | None:
    """The video publisher, or None when the `stream` extra (aiortc, PyAV) is absent:
    the agent still serves everything else."""
    try:
        from rigway.agent.stream.publisher import StreamPublisher
    except ImportError as exc:
        _log.warning("live video is off: %s (install rigway[stream])", exc)
        return None
    return StreamPublisher(screen, settings)


async def _run_until_stopped(link: AgentLink, stop: asyncio.Event | None) -> None:
    run = asyncio.create_task(link.run())
    if stop is None:
        await run
        return
    stopper = asyncio.create_task(stop.wait())
    try:
        await asyncio.wait({run, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if not run.done():
            await link.stop()
        await run
    finally:
        stopper.cancel()
        run.cancel()
        await asyncio.gather(stopper, run, return_exceptions=True)


async def build_hello(
    settings: AgentSettings, desktop: Desktop, native_size: tuple[int, int]
) -> Hello:
    width, height = native_size
    gateway_host = urlsplit(connect_url(settings.gateway_url)).hostname or ""
    os_name, gpu, (mac, lan), displays = await asyncio.gather(
        asyncio.to_thread(detect_os),
        asyncio.to_thread(detect_gpu),
        asyncio.to_thread(detect_network, gateway_host),
        asyncio.to_thread(read_displays, desktop, native_size),
    )
    return Hello(
        protocol=PROTOCOL_VERSION,
        agent_version=__version__,
        os=os_name[:128],
        gpu=gpu[:128],
        backend=settings.backend,
        capture_mode=desktop.capture_mode,
        native_width=width,
        native_height=height,
        mac=mac,
        lan=lan,
        displays=displays,
    )


def detect_os() -> str:
    system = platform.system()
    if system == "Linux":
        with contextlib.suppress(OSError):
            pretty = platform.freedesktop_os_release().get("PRETTY_NAME")
            if pretty:
                return pretty
    return f"{system} {platform.release()}".strip()


def detect_gpu() -> str:
    """Best effort and cheap (no subprocess): "" when nothing can be read."""
    for info in sorted(Path("/proc/driver/nvidia/gpus").glob("*/information")):
        with contextlib.suppress(OSError):
            for line in info.read_text().splitlines():
                if line.startswith("Model:"):
                    return line.partition(":")[2].strip()
    for vendor_file in sorted(Path("/sys/class/drm").glob("card*/device/vendor")):
        with contextlib.suppress(OSError):
            vendor = vendor_file.read_text().strip()
            device = (vendor_file.parent / "device").read_text().strip()
            return f"{_GPU_VENDORS.get(vendor, vendor)} {device}"
    return ""


def detect_network(gateway_host: str) -> tuple[str | None, str | None]:
    """(MAC, LAN /24) of the interface that routes to the gateway, for Wake-on-LAN.

    (None, None) when it cannot be told, e.g. a gateway on loopback.
    """
    local_ip = _route_source_ip(gateway_host)
    if local_ip is None or ipaddress.ip_address(local_ip).is_loopback:
        return None, None
    for addresses in psutil.net_if_addrs().values():
        if not any(a.family == socket.AF_INET and a.address == local_ip for a in addresses):
            continue
        mac = next((a.address for a in addresses if a.family == psutil.AF_LINK), None)
        lan = str(ipaddress.ip_network(f"{local_ip}/24", strict=False))
        return _normalise_mac(mac), lan
    return None, None


def _route_source_ip(host: str) -> str | None:
    # A connected UDP socket sends nothing; it only asks the kernel for the route.
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            probe.connect((host or "192.0.2.1", 9))
            address: str = probe.getsockname()[0]
            return address
    except OSError:
        return None


def _normalise_mac(mac: str | None) -> str | None:
    if mac is None:
        return None
    normal = mac.replace("-", ":").lower()
    if len(normal) != 17 or normal == "00:00:00:00:00:00":
        return None
    return normal
