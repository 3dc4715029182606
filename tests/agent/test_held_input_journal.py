"""The held-input journal: what an agent holds is on disk, and the next start lets go of
what a killed agent left down."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from rigway.agent.backends.sim import SimDesktop
from rigway.agent.held_input_journal import HeldInputJournal, HeldInputs, JournalError
from rigway.agent.runner import AgentSettings, run_agent
from rigway.agent.safety import InputGuard
from rigway.cli.agent import default_held_input_journal
from tests.agent.fake_gateway import FakeGateway
from tests.agent.fakes import FakeApps, FakeDesktop, RecordingDesktop


@pytest.fixture
def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "agents" / "rig-1.held-input.json"


def written(path: Path) -> object:
    return json.loads(path.read_text(encoding="utf-8"))


# ---- the file --------------------------------------------------------------------------


def test_written_inputs_read_back_in_press_order(journal_path: Path) -> None:
    journal = HeldInputJournal(journal_path)
    journal.write(HeldInputs(("win", "shift"), ("right", "left")))
    assert HeldInputJournal(journal_path).read() == HeldInputs(("win", "shift"), ("right", "left"))
    assert written(journal_path) == {
        "version": 1,
        "keys": ["win", "shift"],
        "buttons": ["right", "left"],
    }


def test_nothing_held_leaves_no_file(journal_path: Path) -> None:
    journal = HeldInputJournal(journal_path)
    journal.write(HeldInputs(("ctrl",)))
    journal.write(HeldInputs())
    assert not journal_path.exists()
    assert journal.read() == HeldInputs()


def test_a_write_leaves_no_temporary_file_behind(journal_path: Path) -> None:
    HeldInputJournal(journal_path).write(HeldInputs(("alt",)))
    assert [p.name for p in journal_path.parent.iterdir()] == [journal_path.name]


def test_an_unchanged_state_is_not_rewritten(journal_path: Path) -> None:
    journal = HeldInputJournal(journal_path)
    journal.write(HeldInputs(("alt",)))
    inode = journal_path.stat().st_ino
    journal.write(HeldInputs(("alt",)))
    assert journal_path.stat().st_ino == inode
    journal.write(HeldInputs(("alt", "tab")))
    assert journal.read().keys == ("alt", "tab")


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        '["ctrl"]',
        '{"version": 99, "keys": ["ctrl"]}',
        '{"version": 1, "keys": "ctrl"}',
    ],
)
def test_a_corrupt_journal_is_a_journal_error(journal_path: Path, content: str) -> None:
    journal_path.parent.mkdir(parents=True)
    journal_path.write_text(content)
    with pytest.raises(JournalError, match=str(journal_path)):
        HeldInputJournal(journal_path).read()


def test_unknown_names_are_skipped_and_the_rest_kept(
    journal_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    journal_path.parent.mkdir(parents=True)
    document = {"version": 1, "keys": ["ctrl", "Ctrl", "hyper", 7], "buttons": ["left", "x1"]}
    journal_path.write_text(json.dumps(document))
    with caplog.at_level(logging.WARNING):
        assert HeldInputJournal(journal_path).read() == HeldInputs(("ctrl",), ("left",))
    assert "hyper" in caplog.text


# ---- the guard keeps it ----------------------------------------------------------------


def test_the_guard_journals_every_press_and_release(journal_path: Path) -> None:
    journal = HeldInputJournal(journal_path)
    guard = InputGuard(FakeDesktop(), journal)
    guard.key_down("ctrl")
    guard.button_down("left")
    assert journal.read() == HeldInputs(("ctrl",), ("left",))
    guard.key_up("ctrl")
    assert journal.read() == HeldInputs((), ("left",))
    guard.button_up("left")
    assert not journal_path.exists()


def test_a_press_is_journaled_before_it_is_sent(journal_path: Path) -> None:
    desktop = FakeDesktop()
    desktop.fail_keys.add("win")
    guard = InputGuard(desktop, HeldInputJournal(journal_path))
    with pytest.raises(OSError, match="cannot press"):
        guard.key_down("win")
    assert HeldInputJournal(journal_path).read().keys == ("win",)


def test_a_clean_release_all_clears_the_journal(journal_path: Path) -> None:
    guard = InputGuard(FakeDesktop(), HeldInputJournal(journal_path))
    guard.key_down("shift")
    guard.button_down("middle")
    assert guard.release_all() == ["shift", "mouse_middle"]
    assert not journal_path.exists()


def test_a_failed_release_stays_journaled_and_is_retried(journal_path: Path) -> None:
    desktop = FakeDesktop()
    desktop.fail_releases.add("win")
    guard = InputGuard(desktop, HeldInputJournal(journal_path))
    guard.key_down("win")
    guard.key_down("r")
    assert guard.release_all() == ["r"]
    assert HeldInputJournal(journal_path).read().keys == ("win",)
    desktop.fail_releases.clear()
    assert guard.release_all() == ["win"]
    assert not journal_path.exists()


def test_a_journal_that_cannot_be_written_does_not_stop_input(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    desktop = FakeDesktop()
    guard = InputGuard(desktop, HeldInputJournal(blocker / "held.json"))
    with caplog.at_level(logging.WARNING):
        guard.key_down("ctrl")
    assert desktop.calls == [("key", "ctrl", True)]
    assert "cannot update the held-input journal" in caplog.text


# ---- a killed agent, then a new start --------------------------------------------------


def test_a_new_start_releases_what_a_killed_agent_held(journal_path: Path) -> None:
    killed = InputGuard(FakeDesktop(), HeldInputJournal(journal_path))
    killed.key_down("ctrl")
    killed.key_down("shift")
    killed.button_down("left")
    del killed  # killed: no release_all ever ran

    fresh = FakeDesktop()
    released = InputGuard(fresh, HeldInputJournal(journal_path)).release_left_over()
    assert released == ["shift", "ctrl", "mouse_left"]
    assert fresh.calls == [
        ("key", "shift", False),
        ("key", "ctrl", False),
        ("button", "left", False),
    ]
    assert not journal_path.exists()


def test_a_start_with_no_journal_releases_nothing(journal_path: Path) -> None:
    fresh = FakeDesktop()
    assert InputGuard(fresh, HeldInputJournal(journal_path)).release_left_over() == []
    assert fresh.calls == []


def test_a_start_without_a_journal_configured_releases_nothing() -> None:
    fresh = FakeDesktop()
    assert InputGuard(fresh).release_left_over() == []
    assert fresh.calls == []


def test_a_corrupt_journal_at_start_is_ignored_with_a_warning(
    journal_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    journal_path.parent.mkdir(parents=True)
    journal_path.write_bytes(b"\xff\xfe garbage")
    fresh = FakeDesktop()
    with caplog.at_level(logging.WARNING):
        assert InputGuard(fresh, HeldInputJournal(journal_path)).release_left_over() == []
    assert "ignoring the held-input journal" in caplog.text
    assert fresh.calls == []
    assert not journal_path.exists()


def test_a_release_that_fails_at_start_stays_journaled(journal_path: Path) -> None:
    HeldInputJournal(journal_path).write(HeldInputs(("win", "a")))
    fresh = FakeDesktop()
    fresh.fail_releases.add("win")
    assert InputGuard(fresh, HeldInputJournal(journal_path)).release_left_over() == ["a"]
    assert HeldInputJournal(journal_path).read() == HeldInputs(("win",))


async def test_run_agent_releases_left_over_input_before_serving(journal_path: Path) -> None:
    HeldInputJournal(journal_path).write(HeldInputs(("win", "shift"), ("left",)))
    desktop = RecordingDesktop(SimDesktop())
    stop = asyncio.Event()
    async with FakeGateway().running() as gateway:
        settings = AgentSettings(
            gateway_url=gateway.url, rig_token="rig-token", held_input_journal=journal_path
        )
        agent = asyncio.create_task(run_agent(settings, desktop, stop=stop, apps=FakeApps()))
        await gateway.next_connection()
        assert desktop.releases == ["shift", "win", "mouse_left"]
        assert not journal_path.exists()
        stop.set()
        async with asyncio.timeout(10):
            await agent


def test_the_cli_keeps_the_journal_beside_the_rig_token() -> None:
    token_file = Path(".rigway/agents/rig-1.token")
    assert default_held_input_journal(token_file) == Path(".rigway/agents/rig-1.held-input.json")
