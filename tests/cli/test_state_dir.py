"""`rigway up`'s state directory is private: made 0700, or tightened (with a warning)
when it exists with looser modes; the SQLite store and its WAL are never readable by
other users."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from rigway.cli.state_dir import make_state_dir_private


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A umask that takes nothing away: the modes must not rely on the caller's."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


def write_in_wal_mode(database: Path) -> None:
    connection = sqlite3.connect(database)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("CREATE TABLE accounts (email TEXT)")
        connection.execute("INSERT INTO accounts VALUES ('owner@example.com')")
        connection.commit()
        # Still open: the -wal and -shm files exist until the last connection closes.
        for suffix in ("-wal", "-shm"):
            assert mode_of(database.with_name(database.name + suffix)) == 0o600
    finally:
        connection.close()


@pytest.mark.usefixtures("open_umask")
def test_a_new_state_dir_is_0700_and_its_database_0600(tmp_path: Path) -> None:
    state_dir = tmp_path / "new" / "state"
    database = state_dir / "rigway.db"
    make_state_dir_private(state_dir, database)
    assert mode_of(state_dir) == 0o700
    assert mode_of(database) == 0o600
    write_in_wal_mode(database)


@pytest.mark.usefixtures("open_umask")
def test_a_loose_state_dir_and_its_database_files_are_tightened_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o755)
    database = state_dir / "rigway.db"
    for name in ("rigway.db", "rigway.db-wal", "rigway.db-shm"):
        (state_dir / name).write_bytes(b"")
        (state_dir / name).chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="rigway.cli.state_dir"):
        make_state_dir_private(state_dir, database)
    assert mode_of(state_dir) == 0o700
    for name in ("rigway.db", "rigway.db-wal", "rigway.db-shm"):
        assert mode_of(state_dir / name) == 0o600
    [warning] = caplog.records
    for path in (state_dir, database, state_dir / "rigway.db-wal"):
        assert str(path) in warning.getMessage()
    write_in_wal_mode(database)


def test_a_private_state_dir_is_left_alone_without_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    database = state_dir / "rigway.db"
    database.write_bytes(b"kept")
    database.chmod(0o600)
    with caplog.at_level(logging.WARNING, logger="rigway.cli.state_dir"):
        make_state_dir_private(state_dir, database)
    assert caplog.records == []
    assert mode_of(state_dir) == 0o700
    assert database.read_bytes() == b"kept"


def test_a_store_elsewhere_leaves_no_database_file_behind(tmp_path: Path) -> None:
    state_dir = tmp_path / "state"
    make_state_dir_private(state_dir, None)
    assert mode_of(state_dir) == 0o700
    assert list(state_dir.iterdir()) == []
