"""`rigway agent`: pair this machine with an account and run the host agent.

Which desktop it serves is `agent_desktop`; what `pair` remembers for the other
commands is `agent_config`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import signal
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rigway import event_loop
from rigway.cli.agent_config import (
    AgentConfig,
    AgentStateDirOption,
    agent_state_dir,
    default_token_file,
    read_agent_config,
    reduce_motion_choice,
    resolve_run_target,
    write_agent_config,
)
from rigway.cli.agent_desktop import (
    DESKTOP_OPEN_TIMEOUT_S,
    backend_or_exit,
    known_backend,
    open_desktop,
)

if TYPE_CHECKING:
    from rigway.agent.apps import AppTracker
    from rigway.agent.backends.base import Desktop
    from rigway.agent.install import Installer
    from rigway.agent.link import AgentLink
    from rigway.agent.owner_tray import OwnerTray
    from rigway.agent.runner import AgentSettings
    from rigway.agent.update_service import SelfUpdate

logger = logging.getLogger(__name__)
agent_app = typer.Typer(help="The host agent that runs on a rig.", no_args_is_help=True)


def _read_token(token_file: Path) -> str:
    """The rig token kept in `token_file` (stripped; may be empty); exit 2 when it cannot
    be read."""
    try:
        return token_file.read_text().strip()
    except OSError as exc:
        typer.echo(f"cannot read the rig token: {exc}", err=True)
        raise typer.Exit(code=2) from exc


def _write_token(path: Path, token: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write(token)


@agent_app.command("pair")
def pair_command(
    gateway: Annotated[str, typer.Option(help="Gateway base URL, e.g. https://rigway.example")],
    code: Annotated[str, typer.Option(help="One-time pairing code from the console.")],
    token_file: Annotated[
        Path | None,
        typer.Option(
            help="Where to keep the rig token, mode 0600 (default: <state dir>/rig.token)."
        ),
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="The rig's name (default: this machine's host name).")
    ] = None,
    state_dir: AgentStateDirOption = None,
) -> None:
    """Trade a pairing code for this rig's token; `agent run` then needs no options."""
    from rigway.agent.pairing import PairingError, pair

    agent_dir = agent_state_dir(state_dir)
    token_path = default_token_file(agent_dir) if token_file is None else token_file
    rig_name = name if name is not None else (platform.node() or "rig")
    try:
        result = asyncio.run(pair(gateway, code, name=rig_name, os=_os_name(), gpu=""))
    except PairingError as exc:
        typer.echo(f"pairing failed: {exc}", err=True)
        raise typer.Exit(code=1) from exc
    _write_token(token_path, result.rig_token)
    typer.echo(f"paired as {result.rig_id} ({rig_name}); token saved to {token_path}")
    try:
        remembered = write_agent_config(agent_dir, AgentConfig(gateway, token_path))
    except OSError as exc:
        typer.echo(f"not remembered for `agent run` (pass its options): {exc}", err=True)
    else:
        typer.echo(f"gateway and token file remembered in {remembered} for `rigway agent run`")
    _pin_release_keys(gateway, token_path)


def _pin_release_keys(gateway: str, token_file: Path) -> None:
    """Trust the keys this gateway signs agent releases with, from now on."""
    from rigway.agent.updater import (
        UpdateRefused,
        fetch_release_keys,
        release_keys_file,
        save_release_keys,
    )

    keys_file = release_keys_file(token_file)
    try:
        save_release_keys(keys_file, asyncio.run(fetch_release_keys(gateway)))
    except (UpdateRefused, OSError) as exc:
        typer.echo(f"release keys not saved, so no self-update: {exc}", err=True)
        return
    typer.echo(f"release keys saved to {keys_file}")


@agent_app.command("run")
def run_command(
    gateway: Annotated[
        str | None, typer.Option(help="Gateway base URL (default: as `agent pair` remembered).")
    ] = None,
    fallback_gateway: Annotated[
        list[str] | None,
        typer.Option(
            help="Another node of the same service, tried in turn when the gateway in use"
            " cannot be reached or drops the link (repeatable)."
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(help="File holding the rig token (default: as `agent pair` remembered)."),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(
            help="Desktop backend: sim, x11 or windows (default: windows on Windows, else "
            "x11 on the display in DISPLAY; sim only when asked)."
        ),
    ] = None,
    width: Annotated[int, typer.Option(help="sim only: desktop width.")] = 1920,
    height: Annotated[int, typer.Option(help="sim only: desktop height.")] = 1080,
    control_socket: Annotated[
        Path | None,
        typer.Option(help="Local socket for `rigway agent kill` (default: beside the token)."),
    ] = None,
    update: Annotated[bool, typer.Option(help="Install newer signed releases.")] = True,
    update_interval_s: Annotated[
        float, typer.Option(min=60, help="Seconds between update checks.")
    ] = 6 * 3600.0,
    release_key: Annotated[
        list[str] | None,
        typer.Option(help="Also trust this release public key (besides those of pairing)."),
    ] = None,
    install_root: Annotated[
        Path | None, typer.Option(help="Set by `rigway agent launch`: where versions live.")
    ] = None,
    health_file: Annotated[
        Path | None, typer.Option(help="Set by `rigway agent launch`: written once linked.")
    ] = None,
    reduce_motion: Annotated[
        bool | None,
        typer.Option(
            "--reduce-motion/--no-reduce-motion",
            help="Turn the desktop's UI animations off while an API session is live, back "
            'on after it (default: "reduce_motion" in agent.json, else off).',
        ),
    ] = None,
    state_dir: AgentStateDirOption = None,
) -> None:
    """Connect to the gateway and serve sessions until stopped."""
    from rigway.agent.install_root import RESTART_EXIT_CODE
    from rigway.agent.runner import AgentSettings, connect_url
    from rigway.agent.update_service import SelfUpdate, self_update_settings
    from rigway.agent.updater import UpdateRefused

    agent_dir = agent_state_dir(state_dir)
    gateway, token_file = resolve_run_target(gateway, token_file, agent_dir)
    display = os.environ.get("DISPLAY")
    is_default_backend = backend is None
    backend = known_backend(backend_or_exit(display) if backend is None else backend)
    token = _read_token(token_file)
    fallbacks = tuple(fallback_gateway or ())
    for url in fallbacks:
        try:
            connect_url(url)
        except ValueError as exc:
            typer.echo(f"--fallback-gateway: {exc}", err=True)
            raise typer.Exit(code=2) from exc
    try:
        updates = self_update_settings(
            gateway,
            token_file,
            install_root=install_root,
            health_file=health_file,
            is_enabled=update,
            interval_s=update_interval_s,
            extra_keys=release_key or (),
        )
    except (UpdateRefused, ValueError) as exc:
        typer.echo(f"cannot set up self-update: {exc}", err=True)
        raise typer.Exit(code=2) from exc
    try:
        desktop = open_desktop(
            backend, display=display, width=width, height=height, timeout_s=DESKTOP_OPEN_TIMEOUT_S
        )
    except (ValueError, OSError, RuntimeError) as exc:
        hint = "; --backend sim runs a simulated desktop" if is_default_backend else ""
        typer.echo(f"cannot open the {backend} desktop: {exc}{hint}", err=True)
        raise typer.Exit(code=2) from exc
    settings = AgentSettings(
        gateway_url=gateway,
        fallback_gateway_urls=fallbacks,
        rig_token=token,
        backend=backend,
        held_input_journal=default_held_input_journal(token_file),
        reduce_motion=reduce_motion_choice(reduce_motion, agent_dir),
    )
    socket_path = control_socket or default_control_socket(token_file)
    self_update = SelfUpdate(updates)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            event_loop.run(_serve(settings, desktop, socket_path, self_update))
    finally:
        desktop.close()
    if self_update.restart_requested:
        raise typer.Exit(code=RESTART_EXIT_CODE)


def open_app_tracker(backend: str, desktop: Desktop | None = None) -> AppTracker | None:
    """The windows backend's Job Object tracker; on the sim, real processes that each
    open a window on it (an app session needs one); None: the runner's POSIX default."""
    if backend == "sim":
        from rigway.agent.apps import ProcessTracker
        from rigway.agent.backends.sim import SimDesktop
        from rigway.agent.backends.sim.app_windows import SimAppTracker

        if isinstance(desktop, SimDesktop):
            return SimAppTracker(desktop, ProcessTracker())
    if backend != "windows":
        return None
    from rigway.agent.backends.windows import open_windows_apps

    return open_windows_apps()


def default_control_socket(token_file: Path) -> Path:
    return token_file.with_suffix(".sock")


def default_held_input_journal(token_file: Path) -> Path:
    """Beside the token: the keys and buttons the agent holds down now, released by the
    next start if this agent is killed (`rigway.agent.held_input_journal`)."""
    return token_file.with_suffix(".held-input.json")


async def _serve(
    settings: AgentSettings,
    desktop: Desktop,
    socket_path: Path,
    self_update: SelfUpdate | None = None,
) -> None:
    """The agent plus its local control socket (and self-update), until SIGINT/SIGTERM
    or an update asks for a restart."""
    from rigway.agent.control import owner_kill_handler, serve_control
    from rigway.agent.runner import run_agent

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    stop_on_signals(loop, stop)
    servers: list[asyncio.Server] = []
    ours: list[int] = []  # the inode of the socket file this agent created

    async def on_link(link: AgentLink) -> None:
        servers.append(await serve_control(socket_path, owner_kill_handler(link)))
        ours.append(socket_path.stat().st_ino)

    pending: set[asyncio.Task[None]] = set()

    def control_failed(task: asyncio.Task[None]) -> None:
        pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error(
                "the control socket %s could not start (`rigway agent kill` will not work): %s",
                socket_path,
                task.exception(),
            )

    trays: list[OwnerTray] = []

    def start_control(link: AgentLink) -> None:
        if self_update is not None:
            self_update.start(link, stop)
        if settings.backend == "windows":
            from rigway.agent.backends.windows.desktop import WindowsDesktop
            from rigway.agent.owner_tray import try_start_owner_tray

            tray = try_start_owner_tray(
                link,
                settings.gateway_url,
                on_display_power=(
                    desktop.note_display_power if isinstance(desktop, WindowsDesktop) else None
                ),
            )
            if tray is not None:
                trays.append(tray)
        if not hasattr(asyncio, "start_unix_server"):
            # Windows: no Unix sockets in asyncio; the tray is the owner's local kill path.
            return
        task = asyncio.create_task(on_link(link))
        pending.add(task)
        task.add_done_callback(control_failed)

    try:
        await run_agent(
            settings,
            desktop,
            stop=stop,
            apps=open_app_tracker(settings.backend, desktop),
            on_link=start_control,
        )
    finally:
        for tray in trays:
            await tray.close()
        if self_update is not None:
            await self_update.aclose()
        for server in servers:
            server.close()
            await server.wait_closed()
        # Only our own file: another agent may have taken the path since.
        with contextlib.suppress(FileNotFoundError):
            if ours and socket_path.stat().st_ino == ours[0]:
                socket_path.unlink()


def stop_on_signals(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Set `stop` on SIGINT or SIGTERM, and on Windows on SIGBREAK: the CTRL_BREAK_EVENT
    `rigway agent launch` stops its child with (no signal reaches another process
    there). Windows' proactor loop has no signal handlers: there Python's own handler
    (main thread) hands the event to the loop."""
    for signum in _stop_signals():
        try:
            loop.add_signal_handler(signum, stop.set)
        except NotImplementedError:
            signal.signal(signum, lambda _signum, _frame: loop.call_soon_threadsafe(stop.set))


def _stop_signals() -> tuple[int, ...]:
    signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM)
    if sys.platform == "win32":
        signals += (signal.SIGBREAK,)
    return signals


@agent_app.command("kill")
def kill_command(
    token_file: Annotated[
        Path | None,
        typer.Option(
            help="The running agent's token file, which finds its socket (default: as "
            "`agent pair` remembered, else .rigway/agents/rig-1.token of `rigway up`)."
        ),
    ] = None,
    control_socket: Annotated[Path | None, typer.Option(help="The agent's control socket.")] = None,
    state_dir: AgentStateDirOption = None,
) -> None:
    """Owner kill from the rig: end this rig's active session (`owner_kill`)."""
    from rigway.agent.control import send_command

    if token_file is None:
        remembered = read_agent_config(agent_state_dir(state_dir)).token_file
        token_file = remembered or Path(".rigway/agents/rig-1.token")
    socket_path = control_socket or default_control_socket(token_file)
    try:
        answer = asyncio.run(send_command(socket_path, "owner_kill"))
    except (OSError, TimeoutError, ValueError) as exc:
        typer.echo(f"no running agent answered at {socket_path}: {exc}", err=True)
        raise typer.Exit(code=1) from exc
    if not answer.get("ok"):
        typer.echo(f"kill failed: {answer.get('error')}", err=True)
        raise typer.Exit(code=1)
    typer.echo("session ended (owner_kill)" if answer.get("ended") else "no active session")


@agent_app.command(
    "launch",
    # Every other option is `agent run`'s, passed through as given.
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
)
def launch_command(
    ctx: typer.Context,
    install_root: Annotated[
        Path, typer.Option(help="Where installed versions and the current pointer live.")
    ],
    trial_timeout_s: Annotated[
        float, typer.Option(min=1, help="Seconds a new version has to bring its link up.")
    ] = 120.0,
) -> None:
    """Run `rigway agent run` (with the options that follow) from the current version;
    restart into updates it installs, and roll back one that does not come up."""
    from rigway.agent.launcher import Launcher, LaunchSettings

    logging.basicConfig(level=logging.INFO, format="rigway agent launch: %(message)s")
    settings = LaunchSettings(install_root.absolute(), tuple(ctx.args), trial_timeout_s)
    raise typer.Exit(code=Launcher(settings).run())


def default_install_backend() -> str:
    """What `agent install` registers unless told: the desktop of the session it starts in."""
    return "windows" if sys.platform == "win32" else "x11"


@agent_app.command("install")
def install_command(
    gateway: Annotated[
        str | None, typer.Option(help="Gateway base URL (default: as `agent pair` remembered).")
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option(
            help="File holding the rig token; only its path is registered (default: as "
            "`agent pair` remembered)."
        ),
    ] = None,
    backend: Annotated[
        str | None,
        typer.Option(help="Desktop backend (default: windows on Windows, else x11)."),
    ] = None,
    install_root: Annotated[
        Path | None,
        typer.Option(
            help="Where updates are installed (default: %LOCALAPPDATA%\\Rigway\\agent on "
            "Windows, ~/.local/share/rigway/agent elsewhere)."
        ),
    ] = None,
    state_dir: AgentStateDirOption = None,
) -> None:
    """Start the agent in this user's session now and at each log-on (systemd user unit
    on Linux, Task Scheduler at-logon task on Windows), through `agent launch`, so it
    updates itself."""
    from rigway.agent.install import InstallError, launch_for
    from rigway.agent.runner import connect_url

    gateway, token_file = resolve_run_target(gateway, token_file, agent_state_dir(state_dir))
    backend = known_backend(default_install_backend() if backend is None else backend)
    token = _read_token(token_file)
    root = _install_root(install_root)
    try:
        if token == "":
            raise ValueError(f"{token_file} is empty: pair this rig first")
        connect_url(gateway)
        python = Path(sys.executable)
        launch = launch_for(sys.platform, python, gateway, token_file, backend, root)
    except ValueError as exc:
        typer.echo(f"cannot install: {exc}", err=True)
        raise typer.Exit(code=2) from exc
    try:
        installer = _installer()
        # The launcher would make it too; made here, a folder it cannot write fails now.
        root.mkdir(parents=True, exist_ok=True)
        typer.echo(installer.install(launch))
    except (InstallError, OSError) as exc:
        typer.echo(f"install failed: {exc}", err=True)
        raise typer.Exit(code=1) from exc
    typer.echo(
        f"it updates itself: new versions go to {root}; until the first one it runs "
        f"this installation ({python})"
    )


@agent_app.command("uninstall")
def uninstall_command(
    install_root: Annotated[
        Path | None,
        typer.Option(help="Where `agent install` put updates (default: the same as it)."),
    ] = None,
    purge: Annotated[
        bool, typer.Option("--purge", help="Also remove the updates installed there.")
    ] = False,
) -> None:
    """Stop the agent started by `agent install` and stop starting it at log-on. The
    versions it installed stay unless --purge."""
    from rigway.agent.install import InstallError, purge_install_root

    root = _install_root(install_root)
    try:
        typer.echo(_installer().uninstall())
        if purge:
            typer.echo(purge_install_root(root))
    except InstallError as exc:
        typer.echo(f"uninstall failed: {exc}", err=True)
        raise typer.Exit(code=1) from exc
    if not purge and root.exists():
        typer.echo(f"installed versions stay in {root} (`--purge` removes them)")


def _install_root(chosen: Path | None) -> Path:
    from rigway.agent.install import default_install_root

    if chosen is not None:
        return chosen.absolute()
    return Path(default_install_root(sys.platform, dict(os.environ), Path.home()))


def _installer() -> Installer:
    from rigway.agent.install import SubprocessRunner, installer_for

    return installer_for(
        sys.platform,
        dict(os.environ),
        home=Path.home(),
        temp_dir=Path(tempfile.gettempdir()),
        runner=SubprocessRunner(),
    )


def _os_name() -> str:
    return f"{platform.system()} {platform.release()}".strip() or sys.platform
