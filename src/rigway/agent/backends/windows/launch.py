"""How a launch is spelled for CreateProcessW: the program, its command line, and its
environment block.

Pure: `find_executable` looks a program up as Windows does, minus the current
directory; `build_command_line` quotes as the C runtime parses; `child_environment`
adds the launch variables; `environment_block` lays out CREATE_UNICODE_ENVIRONMENT.
Each raises `LaunchError` with the reason for what Windows would refuse or run unsafely.
"""

from __future__ import annotations

import ntpath
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import Final

from rigway.agent.apps import LAUNCH_ID_ENV, LAUNCH_TAG_ENV, LaunchError

__all__ = [
    "DEFAULT_PATHEXT",
    "MAX_COMMAND_LINE_CHARS",
    "build_command_line",
    "child_environment",
    "environment_block",
    "find_executable",
]

# CreateProcessW's lpCommandLine holds at most 32767 characters, its NUL included.
MAX_COMMAND_LINE_CHARS: Final = 32_766
# Extensions tried for a name without one, when PATHEXT is not set.
DEFAULT_PATHEXT: Final = ".COM;.EXE;.BAT;.CMD"
# cmd.exe re-parses a batch file's arguments by rules no quoting makes safe
# (CVE-2024-24576 "BatBadBut"), and CreateProcessW starts batch files through cmd.exe.
_BATCH_EXTENSIONS: Final = frozenset({".bat", ".cmd"})


def find_executable(
    path: str, *, search_path: str | None, pathext: str | None, is_file: Callable[[str], bool]
) -> str:
    """The program `path` names: absolute (with a drive or a UNC share), or a bare name
    looked up on `search_path` with the extensions of `pathext`, as Windows does, but
    never in the current directory (a program planted in the agent's working directory
    must not win). Raises LaunchError with the reason."""
    if path.strip() == "":
        raise LaunchError("the path is empty")
    if "\0" in path:
        raise LaunchError("the path contains a NUL byte")
    extensions = [e for e in (pathext or DEFAULT_PATHEXT).split(";") if e.startswith(".")]
    if any(mark in path for mark in ("\\", "/", ":")):
        if ntpath.splitdrive(path)[0] == "" or not ntpath.isabs(path):
            raise LaunchError(f"{path} is relative: give an absolute path or a bare command name")
        found = _with_extensions(path, extensions, is_file)
        if found is None:
            raise LaunchError(f"{path} does not exist or is not a file")
    else:
        found = None
        for directory in (search_path or "").split(";"):
            directory = directory.strip().strip('"')
            if directory != "" and ntpath.isabs(directory):
                found = _with_extensions(ntpath.join(directory, path), extensions, is_file)
                if found is not None:
                    break
        if found is None:
            raise LaunchError(f"{path} was not found on PATH")
    if ntpath.splitext(found)[1].lower() in _BATCH_EXTENSIONS:
        raise LaunchError(
            f"{found} is a batch file: cmd.exe parses its arguments unsafely; "
            "launch cmd.exe with /c explicitly instead"
        )
    return found


def _with_extensions(
    candidate: str, extensions: list[str], is_file: Callable[[str], bool]
) -> str | None:
    names = [candidate] if ntpath.splitext(candidate)[1] != "" else []
    names += [candidate + extension for extension in extensions]
    return next((name for name in names if is_file(name)), None)


def build_command_line(executable: str, args: Sequence[str]) -> str:
    """The command line CreateProcessW gets, quoted as the C runtime parses it."""
    if any("\0" in arg for arg in args):
        raise LaunchError("an argument contains a NUL byte")
    line = subprocess.list2cmdline([executable, *args])
    if len(line) > MAX_COMMAND_LINE_CHARS:
        raise LaunchError(f"the command line is {len(line)} characters; Windows allows 32766")
    return line


def child_environment(base: Mapping[str, str], tag: str, launch_id: str) -> dict[str, str]:
    """`base` plus the launch variables (Windows names are case-insensitive, so a
    differently cased copy of ours is dropped, not kept beside it)."""
    ours = {LAUNCH_TAG_ENV.upper(), LAUNCH_ID_ENV.upper()}
    env = {name: value for name, value in base.items() if name.upper() not in ours}
    env[LAUNCH_TAG_ENV] = tag
    env[LAUNCH_ID_ENV] = launch_id
    return env


def environment_block(env: Mapping[str, str]) -> str:
    """A CREATE_UNICODE_ENVIRONMENT block: "name=value\\0" sorted case-insensitively by
    name, ended by one more NUL. Raises LaunchError for a name Windows cannot hold (a
    leading "=" is allowed: cmd keeps per-drive directories as "=C:")."""
    for name, value in env.items():
        if name == "" or "=" in name[1:] or "\0" in name or "\0" in value:
            raise LaunchError(f"the environment variable {name!r} cannot be passed to Windows")
    entries = sorted(env.items(), key=lambda item: item[0].upper())
    if not entries:
        return "\0\0"
    return "".join(f"{name}={value}\0" for name, value in entries) + "\0"
