"""`rigway up`'s state directory, private to the user who runs it.

It holds the SQLite store (account emails, API key hashes, password hashes), the
gateway's secret keys, agent tokens and `local.json`. A new directory is made with mode
0700; one that already exists with group or other access is tightened, and so are the
store's files in it, with a warning that says what changed.
"""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

__all__ = ["make_state_dir_private"]

logger = logging.getLogger(__name__)

# The store's file and the ones SQLite puts beside it (write-ahead log, its index, and the
# rollback journal of a database not in WAL mode).
_SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")
_GROUP_AND_OTHER = 0o077


def make_state_dir_private(state_dir: Path, database_file: Path | None) -> None:
    """`state_dir` with mode 0700 and `database_file` (the local SQLite store, None when
    the store is elsewhere) with no group or other access.

    A missing database file is created empty with mode 0600, which SQLite takes as a
    new database: SQLite gives its write-ahead log and shared-memory files the mode of
    the database file, so they are private from their first byte too."""
    tightened: list[str] = []
    if state_dir.is_dir():
        if _take_group_and_other_access(state_dir):
            tightened.append(str(state_dir))
    else:
        state_dir.mkdir(mode=0o700, parents=True)
        state_dir.chmod(0o700)  # mkdir's mode passes through the umask
    if database_file is not None:
        tightened.extend(
            str(path) for path in _sqlite_files(database_file) if _take_group_and_other_access(path)
        )
        _create_private_file(database_file)
    if tightened:
        logger.warning(
            "took group and other access away from %s: rigway up's state is private",
            ", ".join(tightened),
        )


def _take_group_and_other_access(path: Path) -> bool:
    """Clears the group and other permission bits; whether there were any to clear."""
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & _GROUP_AND_OTHER == 0:
        return False
    path.chmod(mode & ~_GROUP_AND_OTHER)
    return True


def _sqlite_files(database_file: Path) -> list[Path]:
    candidates = (database_file.with_name(database_file.name + s) for s in _SQLITE_SUFFIXES)
    return [path for path in candidates if path.is_file()]


def _create_private_file(path: Path) -> None:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(descriptor)
