"""What a live session keeps of the apps it launched, for the owner's rig page: in
launch order, forgotten as they are killed (one pid, or all), the newest
`LAUNCHED_APPS_LISTED` at most."""

from __future__ import annotations

from datetime import UTC, datetime

from rigway.gateway.sessions.live import LAUNCHED_APPS_LISTED, LaunchedApp, LiveSession


def _live() -> LiveSession:
    now = datetime(2026, 11, 26, tzinfo=UTC)
    return LiveSession(
        id="ses_1",
        account_id="acc_1",
        rig_id="rig_1",
        api_key_id=None,
        mode="desktop",
        idle_timeout_s=600,
        started_at=now,
        last_activity_at=now,
        action_count=0,
        native_width=1920,
        native_height=1080,
        capture_mode="sim",
    )


def test_launches_are_listed_in_order() -> None:
    live = _live()
    live.add_launched_app(11, "notepad.exe")
    live.add_launched_app(12, "/usr/bin/gedit")
    assert live.launched_apps == [LaunchedApp(11, "notepad.exe"), LaunchedApp(12, "/usr/bin/gedit")]


def test_a_killed_pid_leaves_the_list_and_others_stay() -> None:
    live = _live()
    for pid in (11, 12, 13):
        live.add_launched_app(pid, "app")
    live.forget_launched_apps([12, 99])  # 99: not one of the list's
    assert [app.pid for app in live.launched_apps] == [11, 13]


def test_killing_all_empties_the_list() -> None:
    live = _live()
    live.add_launched_app(11, "app")
    live.forget_launched_apps(None)
    assert live.launched_apps == []


def test_an_empty_kill_forgets_nothing() -> None:
    live = _live()
    live.add_launched_app(11, "app")
    live.forget_launched_apps([])
    assert [app.pid for app in live.launched_apps] == [11]


def test_only_the_newest_launches_are_kept() -> None:
    live = _live()
    for pid in range(LAUNCHED_APPS_LISTED + 5):
        live.add_launched_app(pid, "app")
    pids = [app.pid for app in live.launched_apps]
    assert pids == list(range(5, LAUNCHED_APPS_LISTED + 5))
