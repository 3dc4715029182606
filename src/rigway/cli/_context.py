"""What every API command shares: credentials, the remembered session, common options.

Credentials are looked up in this order, per value: the command-line option, the
environment variable (`RIGWAY_API_KEY`, `RIGWAY_BASE_URL`, `RIGWAY_CONSOLE_TOKEN`), then
`<state dir>/local.json` written by `rigway up`. The state directory is `--state-dir`,
else `RIGWAY_STATE_DIR`, else `.rigway` (the same default as `rigway up`).

`rigway sessions start` remembers the new session in `<state dir>/cli-session`, so the
session-scoped commands (`screenshot`, `observe`, `click`, …) work without `--session`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from rigway.client import DEFAULT_BASE_URL, NotFoundError, Rigway, RigwayConsole, SessionEndedError
from rigway.client.local_config import find_local_json
from rigway.client.local_config import read_local_json as read_local_json_file

from ._output import CliError, ExitCode

__all__ = [
    "ApiKeyOption",
    "BaseUrlOption",
    "ConsoleTokenOption",
    "Credentials",
    "JsonOption",
    "SessionOption",
    "StateDirOption",
    "console_client",
    "forget_session",
    "remember_session",
]

LOCAL_JSON = "local.json"
SESSION_FILE = "cli-session"

# ------------------------------------------------------------------------ options

ApiKeyOption = Annotated[
    str | None,
    typer.Option(
        "--api-key",
        envvar="RIGWAY_API_KEY",
        show_envvar=True,
        help="API key (else <state dir>/local.json from `rigway up`).",
    ),
]
BaseUrlOption = Annotated[
    str | None,
    typer.Option(
        "--base-url",
        envvar="RIGWAY_BASE_URL",
        show_envvar=True,
        help=f"Gateway URL (else local.json, else {DEFAULT_BASE_URL}).",
    ),
]
ConsoleTokenOption = Annotated[
    str | None,
    typer.Option(
        "--console-token",
        envvar="RIGWAY_CONSOLE_TOKEN",
        show_envvar=True,
        help="The owner's console token (else local.json from `rigway up`).",
    ),
]
StateDirOption = Annotated[
    Path,
    typer.Option(
        "--state-dir",
        envvar="RIGWAY_STATE_DIR",
        show_envvar=True,
        help="Where local.json and the remembered session live.",
    ),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print machine-readable JSON on stdout, nothing else.")
]
SessionOption = Annotated[
    str | None,
    typer.Option(
        "--session",
        "-s",
        help="Session id (default: the last one `rigway sessions start` began).",
    ),
]

DEFAULT_STATE_DIR = Path(".rigway")

# -------------------------------------------------------------------- credentials


def read_local_json(state_dir: Path) -> dict[str, Any]:
    """`<state dir>/local.json` from `rigway up`, or {} when absent or unreadable (read
    as the SDK reads it when a client is built without credentials). With the default
    state dir and no file in it, the nearest `.rigway/local.json` above the working
    directory, as the SDK finds it: a command run from a subfolder of the checkout."""
    path = state_dir / LOCAL_JSON
    if state_dir == DEFAULT_STATE_DIR and not path.is_file():
        # The environment was already read by the option (RIGWAY_STATE_DIR).
        found = find_local_json(Path.cwd(), environ={})
        if found is not None:
            path = found
    return read_local_json_file(path)


def _local_str(local: dict[str, Any], field: str) -> str | None:
    value = local.get(field)
    return value if isinstance(value, str) and value != "" else None


@dataclass(frozen=True)
class Credentials:
    """The options of one command invocation, resolved lazily into clients."""

    state_dir: Path
    api_key: str | None = None
    base_url: str | None = None
    console_token: str | None = None

    def _base_url(self, local: dict[str, Any]) -> str:
        return self.base_url or _local_str(local, "base_url") or DEFAULT_BASE_URL

    def _not_found(self, credential: str, option: str, envvar: str) -> CliError:
        """Exit 3 for a credential found nowhere: every way to pass it, local.json last."""
        return CliError(
            f"no {credential}: pass {option}, set {envvar}, or run `rigway up` "
            f"(which writes {self.state_dir / LOCAL_JSON})",
            ExitCode.AUTH,
            code="missing_" + credential.lower().replace(" ", "_"),
        )

    def api_key_and_url(self) -> tuple[str, str]:
        """The API key and base URL; CliError (exit 3) when no key is found anywhere."""
        local = read_local_json(self.state_dir)
        api_key = self.api_key or _local_str(local, "api_key")
        if api_key is None:
            raise self._not_found("API key", "--api-key", "RIGWAY_API_KEY")
        return api_key, self._base_url(local)

    def api_client(self) -> Rigway:
        """A `Rigway` client; CliError (exit 3) when no API key is found anywhere."""
        api_key, base_url = self.api_key_and_url()
        return Rigway(api_key=api_key, base_url=base_url)

    @contextmanager
    def session_client(self, session_option: str | None) -> Iterator[tuple[Rigway, str]]:
        """A `Rigway` client, closed after, and the session to act on: `--session`, else
        the remembered one (CliError, exit 2, when there is neither).

        A session the gateway reports over or unknown is forgotten (`session_errors`).
        """
        session_id = resolve_session_id(session_option, self.state_dir)
        with self.api_client() as client, session_errors(self.state_dir, session_id):
            yield client, session_id

    def console_client(self) -> RigwayConsole:
        """A `RigwayConsole` client; CliError (exit 3) when no console token is found."""
        local = read_local_json(self.state_dir)
        token = self.console_token or _local_str(local, "console_token")
        if token is None:
            raise self._not_found("console token", "--console-token", "RIGWAY_CONSOLE_TOKEN")
        return RigwayConsole(token=token, base_url=self._base_url(local))


def console_client(
    console_token: str | None, base_url: str | None, state_dir: Path
) -> RigwayConsole:
    """The console client of a console command's options (see `Credentials`)."""
    return Credentials(state_dir, base_url=base_url, console_token=console_token).console_client()


# ------------------------------------------------------------ remembered session


def remember_session(state_dir: Path, session_id: str) -> None:
    """Make `session_id` the default of the session-scoped commands."""
    state_dir.mkdir(parents=True, exist_ok=True)
    (state_dir / SESSION_FILE).write_text(session_id + "\n")


def remembered_session(state_dir: Path) -> str | None:
    """The session `rigway sessions start` last began, if any."""
    try:
        text = (state_dir / SESSION_FILE).read_text().strip()
    except OSError:
        return None
    return text or None


def forget_session(state_dir: Path, session_id: str) -> None:
    """Drop the remembered session when it is `session_id` (it has ended)."""
    if remembered_session(state_dir) == session_id:
        (state_dir / SESSION_FILE).unlink(missing_ok=True)


def resolve_session_id(option: str | None, state_dir: Path) -> str:
    """`--session`, else the remembered session; CliError (exit 2) when neither exists."""
    if option is not None:
        return option
    remembered = remembered_session(state_dir)
    if remembered is None:
        raise CliError(
            "no session: pass --session ID or start one with `rigway sessions start`",
            ExitCode.USAGE,
            code="no_session",
        )
    return remembered


@contextmanager
def session_errors(state_dir: Path, session_id: str) -> Iterator[None]:
    """Forget a remembered session the gateway says is over or unknown.

    The next command then says "no session" instead of failing on a stale id again.
    """
    try:
        yield
    except (SessionEndedError, NotFoundError) as exc:
        if exc.code in ("session_ended", "session_not_found"):
            forget_session(state_dir, session_id)
        raise
