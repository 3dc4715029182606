"""A PostgreSQL server of a test's own, to crash and start again (never the shared one on
5432, which other tests use): a cluster made by `initdb` in a directory of its own,
listening on a free port of 127.0.0.1 with trust authentication."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pwd
import re
import shutil
import signal
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.local_processes import free_port

__all__ = ["OwnPostgres", "own_postgres_server"]

START_TIMEOUT_S = 30
STOP_TIMEOUT_S = 30.0
# What a crash of the server's processes loses is what a test of a restart looks at, and
# these keep it exact: the machine does not go down, so what was written to its page cache
# survives without fsync, and no page is ever torn. `synchronous_commit` stays on: off,
# a commit answered just before the crash could be lost with its WAL still in the
# server's buffers.
_SETTINGS = {
    "listen_addresses": "'127.0.0.1'",
    "fsync": "off",
    "full_page_writes": "off",
    "max_connections": "50",
    "shared_buffers": "16MB",
}


def _binaries() -> Path | None:
    """The bin directory of the newest PostgreSQL installed the Debian way, if any."""
    found = [
        bin_dir
        for bin_dir in Path("/usr/lib/postgresql").glob("*/bin")
        if all((bin_dir / name).exists() for name in ("initdb", "postgres", "pg_isready"))
    ]
    versioned = [d for d in found if re.fullmatch(r"\d+(\.\d+)?", d.parent.name)]
    if not versioned:
        return None
    return max(versioned, key=lambda d: tuple(int(part) for part in d.parent.name.split(".")))


class OwnPostgres:
    """A PostgreSQL cluster in `directory` (which its server's user must own), served on
    a free port: `start` it, crash it (`stop_immediately`, `kill`), `start` it again on
    the same data and port. `url` names its `postgres` database.

    The postmaster runs as a child of this process (under `runuser` when it runs as
    root), not daemonised by `pg_ctl`: once killed it is reaped at once, whereas an
    orphan waits for init to reap it, and a new postmaster refuses to start while the
    old one's pid still answers (a zombie's does)."""

    def __init__(self, directory: Path, binaries: Path, run_as: list[str]) -> None:
        self.port = free_port()
        self.url = f"postgresql+asyncpg://postgres@127.0.0.1:{self.port}/postgres"
        self.directory = directory
        self.data = directory / "data"
        self.log = directory / "server.log"
        self._binaries = binaries
        self._run_as = run_as
        self._process: asyncio.subprocess.Process | None = None

    async def initialise(self) -> None:
        """Make the cluster: trust authentication, superuser `postgres`, settings for speed."""
        await self._run(
            "initdb", "--pgdata", str(self.data), "--auth", "trust", "--username", "postgres",
            "--encoding", "UTF8", "--no-sync", "--no-instructions",
        )  # fmt: skip
        settings = {
            **_SETTINGS,
            "port": str(self.port),
            # The socket of the server's own, not /var/run/postgresql of the shared one.
            "unix_socket_directories": f"'{self.directory}'",
        }
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{name} = {value}\n" for name, value in settings.items())

    async def start(self) -> None:
        """Start the server; return once it accepts connections (after crash recovery,
        when the last stop was a crash), within `START_TIMEOUT_S`."""
        with self.log.open("ab") as log:
            self._process = await asyncio.create_subprocess_exec(
                *self._run_as, str(self._binaries / "postgres"), "-D", str(self.data),
                cwd=self.directory, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log,
            )  # fmt: skip
        async with asyncio.timeout(START_TIMEOUT_S):
            while not await self._accepts_connections():
                if self._process.returncode is not None:
                    raise RuntimeError(
                        f"postgres exited {self._process.returncode}:\n{self._log()}"
                    )
                await asyncio.sleep(0.05)

    async def stop_immediately(self) -> None:
        """Stop as a crash does (SIGQUIT, `pg_ctl stop -m immediate`): no checkpoint, every
        connection cut, recovery on the next start. Returns once the server is gone."""
        await self._signal_and_wait(signal.SIGQUIT, [])

    async def kill(self) -> None:
        """SIGKILL the postmaster and every process it started, as the loss of its machine
        would; returns once they are all gone (a new postmaster refuses to start while an
        old backend still holds the shared memory)."""
        postmaster = self._postmaster_pid()
        await self._signal_and_wait(
            signal.SIGKILL, [] if postmaster is None else _children_of(postmaster)
        )

    async def stop_if_running(self) -> None:
        if self._process is not None and self._process.returncode is None:
            await self.stop_immediately()

    async def _signal_and_wait(self, signal_number: int, also: list[int]) -> None:
        process = self._process
        if process is None or process.returncode is not None:
            return
        postmaster = self._postmaster_pid()
        # Under runuser the postmaster is runuser's child, known by its pid file; until it
        # has written one, only the process started here is known.
        for pid in [postmaster or process.pid, *also]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal_number)
        async with asyncio.timeout(STOP_TIMEOUT_S):
            await process.wait()
            while any(_is_running(pid) for pid in also):
                await asyncio.sleep(0.02)

    async def _accepts_connections(self) -> bool:
        probe = await asyncio.create_subprocess_exec(
            str(self._binaries / "pg_isready"), "--quiet", "--host", "127.0.0.1",
            "--port", str(self.port), "--username", "postgres", "--dbname", "postgres",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        return await probe.wait() == 0

    def _postmaster_pid(self) -> int | None:
        try:
            first_line = (self.data / "postmaster.pid").read_text().split("\n", 1)[0]
        except FileNotFoundError:
            return None
        return int(first_line) if first_line.strip().isdigit() else None

    def _log(self) -> str:
        return self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""

    async def _run(self, program: str, *arguments: str) -> None:
        process = await asyncio.create_subprocess_exec(
            *self._run_as, str(self._binaries / program), *arguments,
            cwd=self.directory, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        output, _ = await process.communicate()
        if process.returncode != 0:
            raise RuntimeError(
                f"{program} {' '.join(arguments)} exited {process.returncode}:\n"
                f"{output.decode(errors='replace')}"
            )


def _children_of(parent: int) -> list[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # "pid (comm) state ppid …": comm may hold spaces and parentheses.
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == parent:
                children.append(int(stat.parent.name))
    return children


def _is_running(pid: int) -> bool:
    """Whether `pid` lives; a zombie (dead, not yet reaped by its new parent) does not."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in {"Z", "X"}


@contextlib.asynccontextmanager
async def own_postgres_server() -> AsyncIterator[OwnPostgres]:
    """A started `OwnPostgres`, stopped at the end (whatever state the test left it in)
    and its directory removed. Skips when this machine cannot run one: no PostgreSQL
    binaries, or running as root without `runuser` or a `postgres` user."""
    binaries = _binaries()
    if binaries is None:
        pytest.skip("no PostgreSQL server under /usr/lib/postgresql/*/bin (the postgresql package)")
    run_as: list[str] = []
    owner: pwd.struct_passwd | None = None
    if os.geteuid() == 0:  # initdb and postgres refuse to run as root
        runuser = shutil.which("runuser")
        if runuser is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL as postgres")
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and no `postgres` user to start PostgreSQL as")
        run_as = [runuser, "-u", "postgres", "--"]
    # Not under pytest's tmp_path: its base directory is root's alone (0700), which the
    # postgres user could not enter. A short path keeps the socket's within its limit.
    directory = Path(tempfile.mkdtemp(prefix="rigway-pg-"))
    try:
        if owner is not None:
            os.chown(directory, owner.pw_uid, owner.pw_gid)
        server = OwnPostgres(directory, binaries, run_as)
        await server.initialise()
        await server.start()
        try:
            yield server
        finally:
            await server.stop_if_running()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
