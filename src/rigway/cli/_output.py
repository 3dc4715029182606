"""Output and exit codes of the API commands.

With `--json` a command prints exactly one JSON document on stdout and nothing else
(progress and errors go to stderr); without it, tables and sentences for people. A
failure is one line on stderr: `rigway: error: <code>: <detail> (HTTP <status>, request
id <id>)` for people, or under `--json` one JSON object, always of this shape:

```
{"error": "<code>", "detail": "<sentence or null>", "status": <HTTP status or null>,
 "request_id": "<id or null>", "exit_code": <the process's exit code>}
```

(`retry_after`, in seconds, is added to a 429's.) `code` is the gateway's error code,
an SDK code (`connection_error`, `timeout`), or for a failure the CLI itself found
`no_session`, `missing_api_key`, `missing_console_token`, else its exit code's name
(`usage` for a bad option or argument, `not_found`, `conflict`).

Exit codes (also in `rigway --help`):

```
0  ok
1  unexpected error (a bug, or a response the CLI did not understand)
2  usage: bad arguments, no session to act on, an ambiguous target name, or 400
3  auth: no credentials, 401 invalid key/token, 403 access disabled/insufficient scope
4  not found: 404 (rig, session, key, webhook, app) or no target with that id/name
5  conflict: 409 (rig offline/busy, webhook limit, wake unavailable, a batch that
   stopped or was refused: target_gone, stale_frame, …) or 410 session ended
6  rate limited: 429 (requests, input events, concurrent sessions)
7  host or server error: 502 host_error, 504 host_timeout, other 5xx
8  connection error: the gateway could not be reached or did not answer in time
9  not met: `rigway wait` timed out before its condition held
10 port in use: `rigway up` found another process listening on its port
```
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from enum import IntEnum
from typing import Any, Generic, TypeVar

import httpx2
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from rigway.client import APIConnectionError, APIStatusError, RigwayError, errors

__all__ = [
    "EXIT_CODES_HELP",
    "CliError",
    "Column",
    "ExitCode",
    "Output",
    "error_document",
    "error_line",
    "exit_code_for",
]

RecordT = TypeVar("RecordT")


class ExitCode(IntEnum):
    OK = 0
    UNEXPECTED = 1
    USAGE = 2
    AUTH = 3
    NOT_FOUND = 4
    CONFLICT = 5
    RATE_LIMITED = 6
    SERVER = 7
    CONNECTION = 8
    NOT_MET = 9
    PORT_IN_USE = 10  # `rigway up`: another process listens on the port


# For the epilog of `rigway --help` (typer's rich help keeps these line breaks).
EXIT_CODES_HELP = """Exit codes:
0 ok · 1 unexpected · 2 usage or 400 invalid_request · 3 auth: none, 401, 403
4 not found: 404 or no such target · 5 conflict: 409, 410 session ended
6 rate limited: 429 · 7 host/server error: 502, 504, 5xx · 8 connection error
9 not met: `rigway wait` timed out · 10 `rigway up`: the port is in use"""


class CliError(Exception):
    """A failure the CLI itself detects (no credentials, no session): message + exit code."""

    def __init__(self, message: str, exit_code: ExitCode, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.code = exit_code.name.lower() if code is None else code

    def document(self) -> dict[str, Any]:
        """The `--json` form of this failure (the shape in this module's docstring)."""
        return {
            "error": self.code,
            "detail": self.message,
            "status": None,
            "request_id": None,
            "exit_code": int(self.exit_code),
        }


# The first class the error is an instance of decides (APITimeoutError is an
# APIConnectionError, so a client-side timeout counts as a connection error).
_EXIT_CODES: Sequence[tuple[ExitCode, tuple[type[RigwayError], ...]]] = (
    (
        ExitCode.USAGE,
        (errors.BadRequestError, errors.UnsupportedActionError, errors.AmbiguousTargetError),
    ),
    (ExitCode.AUTH, (errors.AuthenticationError, errors.PermissionDeniedError)),
    (ExitCode.NOT_FOUND, (errors.NotFoundError, errors.TargetNotFoundError)),
    (ExitCode.CONFLICT, (errors.ConflictError, errors.SessionEndedError)),
    (ExitCode.RATE_LIMITED, (errors.RateLimitError,)),
    (ExitCode.SERVER, (errors.HostError, errors.HostTimeoutError, errors.InternalServerError)),
    (ExitCode.CONNECTION, (errors.APIConnectionError,)),
)


def exit_code_for(error: RigwayError) -> ExitCode:
    """The exit code that names `error`'s class of failure."""
    for code, error_classes in _EXIT_CODES:
        if isinstance(error, error_classes):
            return code
    if error.code.startswith("missing_"):
        return ExitCode.AUTH  # the SDK found no credential
    if isinstance(error, APIStatusError) and 400 <= (error.status or 0) < 500:
        return ExitCode.USAGE  # 405, 413, …: the request itself was wrong
    return ExitCode.UNEXPECTED


def unreachable_gateway(error: APIConnectionError) -> str | None:
    """The gateway address a request that got no response was for, when known.

    The SDK raises its connection errors from httpx's, which carry the request.
    """
    cause = error.__cause__
    if not isinstance(cause, httpx2.TransportError):
        return None
    try:
        url = cause.request.url
    except RuntimeError:  # an httpx error raised outside a request has none
        return None
    return f"{url.scheme}://{url.netloc.decode('ascii')}"


def _detail(error: RigwayError) -> str | None:
    """The sentence after the code: the gateway's detail, or the SDK's own message when
    no response came (with the address and what to do about it)."""
    if error.status is not None:
        return error.detail
    if not isinstance(error, APIConnectionError):
        return error.message
    gateway = unreachable_gateway(error)
    where = "the gateway" if gateway is None else f"the gateway at {gateway}"
    return (
        f"cannot reach {where} ({error.message}): is it running? `rigway up` starts a "
        "local one; --base-url or RIGWAY_BASE_URL names another"
    )


def error_document(error: RigwayError) -> dict[str, Any]:
    """The `--json` form of an API failure (the shape in this module's docstring)."""
    document: dict[str, Any] = {
        "error": error.code,
        "detail": _detail(error),
        "status": error.status,
        "request_id": error.request_id,
        "exit_code": int(exit_code_for(error)),
    }
    retry_after = getattr(error, "retry_after", None)
    if isinstance(retry_after, float):
        document["retry_after"] = retry_after
    return document


def error_line(error: RigwayError) -> str:
    """One line for stderr: code, detail, HTTP status and request id."""
    detail = _detail(error)
    text = error.code if detail is None else f"{error.code}: {detail}"
    facts = [] if error.status is None else [f"HTTP {error.status}"]
    if error.request_id is not None:
        facts.append(f"request id {error.request_id}")
    retry_after = getattr(error, "retry_after", None)
    if isinstance(retry_after, float):
        facts.append(f"retry after {retry_after:g} s")
    suffix = f" ({', '.join(facts)})" if facts else ""
    return f"rigway: error: {text}{suffix}"


def to_jsonable(value: Any) -> Any:
    """Pydantic models (and lists of them) as plain JSON data, extra fields included."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {key: to_jsonable(item) for key, item in value.items()}
    return value


@dataclass(frozen=True)
class Column(Generic[RecordT]):
    """One column of a table of records: its header, and the cell it shows for a record."""

    header: str
    cell: Callable[[RecordT], str]


# Piped or captured output has no terminal width; rich would assume 80 columns and
# wrap ids mid-word. A table still takes only the width it needs.
_PIPE_WIDTH = 500


class Output:
    """Where a command's results go: JSON for scripts, rich text for people."""

    def __init__(self, *, json_mode: bool) -> None:
        self.json_mode = json_mode
        self._stdout = Console(highlight=False)
        if not self._stdout.is_terminal:
            self._stdout = Console(highlight=False, width=_PIPE_WIDTH)
        self._stderr = Console(stderr=True, highlight=False)

    def data(self, value: Any, *, human: str | None = None) -> None:
        """The command's result: JSON in --json mode, else `human` (when given)."""
        if self.json_mode:
            sys.stdout.write(json.dumps(to_jsonable(value), indent=2) + "\n")
        elif human is not None:
            self._stdout.print(human, markup=False)

    def line(self, text: str) -> None:
        """A sentence for people on stdout; nothing in --json mode."""
        if not self.json_mode:
            self._stdout.print(text, markup=False)

    def records(
        self,
        records: Sequence[RecordT],
        columns: Sequence[Column[RecordT]],
        *,
        title: str,
        json_key: str,
    ) -> None:
        """A list command's result: `{json_key: records}` in --json mode, else a table."""
        self.data({json_key: records})
        self.table(title, columns, records)

    def record(self, record: RecordT, columns: Sequence[Column[RecordT]], *, title: str) -> None:
        """A show command's result: the record in --json mode, else a one-row table."""
        self.data(record)
        self.table(title, columns, [record])

    def table(
        self, title: str, columns: Sequence[Column[RecordT]], records: Sequence[RecordT]
    ) -> None:
        """A table for people on stdout, a row per record; nothing in --json mode."""
        if self.json_mode:
            return
        if not records:
            self._stdout.print(f"No {title.lower()}.", markup=False)
            return
        table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
        for index, column in enumerate(columns):
            # The first column is an id, which must stay copy-pasteable on one line.
            table.add_column(column.header, no_wrap=index == 0, overflow="fold")
        for record in records:
            table.add_row(*(column.cell(record) for column in columns))
        self._stdout.print(table)

    def working(self, text: str) -> AbstractContextManager[object]:
        """A spinner on stderr while slow work runs, shown only to a person at a terminal."""
        if self.json_mode or not self._stderr.is_terminal:
            return nullcontext()
        return self._stderr.status(text)

    def warn(self, text: str) -> None:
        """A note on stderr (never mixed into --json output)."""
        self._stderr.print(text, markup=False)
