"""`rigway agent install/uninstall`: the generated systemd unit and task XML, exactly
(both run the launcher, `agent launch --install-root …`, with the run options), the
install flows over a fake command runner and a temporary config directory, the
per-user install root, and purging it."""

from __future__ import annotations

import shlex
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rigway.agent.install import (
    TASK_NAME,
    TASK_NAMESPACE,
    UNIT_NAME,
    AgentLaunch,
    CommandResult,
    InstallError,
    SystemdUserInstaller,
    TaskSchedulerInstaller,
    config_home,
    default_install_root,
    gui_interpreter,
    installer_for,
    launch_for,
    purge_install_root,
    systemd_quote,
    systemd_unit,
    task_xml,
    task_xml_bytes,
    windows_user_id,
)
from rigway.agent.install_root import InstallRoot, write_health_marker

GATEWAY = "https://gw.example"
NS = {"t": TASK_NAMESPACE}
USER = "DESKTOP-1\\alice"
LINUX_LAUNCH = AgentLaunch(
    python=PurePosixPath("/opt/rigway/bin/python"),
    gateway_url=GATEWAY,
    token_file=PurePosixPath("/home/alice/.rigway/rig.token"),
    backend="x11",
    install_root=PurePosixPath("/home/alice/.local/share/rigway/agent"),
)
WINDOWS_LAUNCH = AgentLaunch(
    python=PureWindowsPath("C:\\Program Files\\Rigway\\pythonw.exe"),
    gateway_url=GATEWAY,
    token_file=PureWindowsPath("C:\\Users\\alice\\.rigway\\rig.token"),
    backend="windows",
    install_root=PureWindowsPath("C:\\Users\\alice\\AppData\\Local\\Rigway\\agent"),
)
POSIX_ROOT = PurePosixPath("/r")
OK = CommandResult(0, "", "")


class FakeRunner:
    """Records every command; answers from `answers` (by argv prefix) or with OK."""

    def __init__(self, answers: dict[tuple[str, ...], CommandResult] | None = None) -> None:
        self.commands: list[list[str]] = []
        self.answers = answers or {}
        self.missing: set[str] = set()
        self.files_seen: dict[str, bytes] = {}

    def run(self, argv: Sequence[str]) -> CommandResult:
        command = list(argv)
        self.commands.append(command)
        if command[0] in self.missing:
            raise FileNotFoundError(2, "No such file or directory", command[0])
        if "/XML" in command:
            self.files_seen["xml"] = Path(command[command.index("/XML") + 1]).read_bytes()
        for prefix, answer in self.answers.items():
            if tuple(command[: len(prefix)]) == prefix:
                return answer
        return OK


# ---- the launch command -----------------------------------------------------------


def test_launch_runs_the_launcher_with_paired_settings_and_no_token() -> None:
    assert LINUX_LAUNCH.argv() == [
        "/opt/rigway/bin/python",
        "-m",
        "rigway.cli.main",
        "agent",
        "launch",
        "--install-root",
        "/home/alice/.local/share/rigway/agent",
        "--gateway",
        GATEWAY,
        "--token-file",
        "/home/alice/.rigway/rig.token",
        "--backend",
        "x11",
    ]


def test_launch_with_relative_token_file_is_refused() -> None:
    with pytest.raises(ValueError, match="absolute"):
        AgentLaunch(
            PurePosixPath("/usr/bin/python3"),
            GATEWAY,
            PurePosixPath("rig.token"),
            "x11",
            POSIX_ROOT,
        )


def test_launch_with_relative_install_root_is_refused() -> None:
    with pytest.raises(ValueError, match="absolute"):
        AgentLaunch(
            PurePosixPath("/usr/bin/python3"),
            GATEWAY,
            PurePosixPath("/t"),
            "x11",
            PurePosixPath("r"),
        )


def test_launch_with_newline_in_url_is_refused() -> None:
    with pytest.raises(ValueError, match="control character"):
        AgentLaunch(
            PurePosixPath("/usr/bin/python3"),
            GATEWAY + "\nExecStartPre=/bin/sh",
            PurePosixPath("/t"),
            "x11",
            POSIX_ROOT,
        )


def test_launch_with_unknown_backend_is_refused() -> None:
    with pytest.raises(ValueError, match="backend"):
        AgentLaunch(
            PurePosixPath("/usr/bin/python3"), GATEWAY, PurePosixPath("/t"), "wayland", POSIX_ROOT
        )


def test_gui_interpreter_prefers_pythonw_beside_python(tmp_path: Path) -> None:
    (tmp_path / "python.exe").touch()
    (tmp_path / "pythonw.exe").touch()
    assert gui_interpreter(tmp_path / "python.exe") == tmp_path / "pythonw.exe"


def test_gui_interpreter_without_pythonw_keeps_python(tmp_path: Path) -> None:
    (tmp_path / "python.exe").touch()
    assert gui_interpreter(tmp_path / "python.exe") == tmp_path / "python.exe"


def test_gui_interpreter_leaves_posix_python_alone(tmp_path: Path) -> None:
    assert gui_interpreter(tmp_path / "python3") == tmp_path / "python3"


# ---- systemd unit -----------------------------------------------------------------


def test_x11_unit_is_exactly_the_graphical_session_unit() -> None:
    exec_start = (
        'ExecStart="/opt/rigway/bin/python" "-m" "rigway.cli.main" "agent" "launch" '
        '"--install-root" "/home/alice/.local/share/rigway/agent" '
        '"--gateway" "https://gw.example" "--token-file" "/home/alice/.rigway/rig.token" '
        '"--backend" "x11"'
    )
    assert systemd_unit(LINUX_LAUNCH) == "\n".join(
        [
            "# Written by `rigway agent install`; `rigway agent uninstall` removes it.",
            "[Unit]",
            "Description=Rigway host agent",
            "After=graphical-session.target",
            "PartOf=graphical-session.target",
            "",
            "[Service]",
            "Type=simple",
            exec_start,
            "Restart=on-failure",
            "RestartSec=5",
            "",
            "[Install]",
            "WantedBy=graphical-session.target",
            "",
        ]
    )


def test_sim_unit_is_wanted_by_default_target() -> None:
    launch = AgentLaunch(LINUX_LAUNCH.python, GATEWAY, LINUX_LAUNCH.token_file, "sim", POSIX_ROOT)
    unit = systemd_unit(launch)
    assert "WantedBy=default.target" in unit.splitlines()
    assert "graphical-session" not in unit


def test_systemd_quote_escapes_specifiers_variables_and_quotes() -> None:
    assert systemd_quote('/a b/100%$HOME"\\') == '"/a b/100%%$$HOME\\"\\\\"'


@given(st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E)))
def test_systemd_quote_reads_back_as_the_argument(argument: str) -> None:
    # Within double quotes, systemd's C escapes for `\\` and `\"` read as POSIX shell
    # (shlex) escapes do; `%%` and `$$` are systemd's own, undone first.
    quoted = systemd_quote(argument).replace("%%", "%").replace("$$", "$")
    assert shlex.split(quoted) == [argument]


# ---- task XML ---------------------------------------------------------------------


def _task(xml_text: str) -> ET.Element:
    return ET.fromstring(task_xml_bytes(xml_text))  # noqa: S314 (our own output)


def test_task_xml_starts_at_the_users_logon() -> None:
    task = _task(task_xml(WINDOWS_LAUNCH, user_id=USER))
    trigger = task.find("t:Triggers/t:LogonTrigger", NS)
    assert trigger is not None
    assert trigger.findtext("t:UserId", namespaces=NS) == USER
    assert trigger.findtext("t:Enabled", namespaces=NS) == "true"


def test_task_xml_runs_with_interactive_token_at_least_privilege() -> None:
    task = _task(task_xml(WINDOWS_LAUNCH, user_id=USER))
    principal = task.find("t:Principals/t:Principal", NS)
    assert principal is not None
    assert principal.findtext("t:UserId", namespaces=NS) == USER
    assert principal.findtext("t:LogonType", namespaces=NS) == "InteractiveToken"
    assert principal.findtext("t:RunLevel", namespaces=NS) == "LeastPrivilege"


def test_task_xml_never_asks_for_highest_privileges() -> None:
    assert "HighestAvailable" not in task_xml(WINDOWS_LAUNCH, user_id=USER)


def test_task_xml_restarts_on_failure_and_never_times_out() -> None:
    settings = _task(task_xml(WINDOWS_LAUNCH, user_id=USER)).find("t:Settings", NS)
    assert settings is not None
    assert settings.findtext("t:RestartOnFailure/t:Interval", namespaces=NS) == "PT1M"
    assert settings.findtext("t:RestartOnFailure/t:Count", namespaces=NS) == "255"
    assert settings.findtext("t:ExecutionTimeLimit", namespaces=NS) == "PT0S"
    assert settings.findtext("t:DisallowStartIfOnBatteries", namespaces=NS) == "false"


def test_task_xml_action_runs_the_launcher_without_the_token() -> None:
    action = _task(task_xml(WINDOWS_LAUNCH, user_id=USER)).find("t:Actions/t:Exec", NS)
    assert action is not None
    assert action.findtext("t:Command", namespaces=NS) == "C:\\Program Files\\Rigway\\pythonw.exe"
    assert action.findtext("t:Arguments", namespaces=NS) == (
        "-m rigway.cli.main agent launch "
        "--install-root C:\\Users\\alice\\AppData\\Local\\Rigway\\agent "
        "--gateway https://gw.example "
        "--token-file C:\\Users\\alice\\.rigway\\rig.token --backend windows"
    )


def test_task_xml_quotes_an_install_root_with_spaces() -> None:
    root = PureWindowsPath("C:\\Users\\Alice Smith\\AppData\\Local\\Rigway\\agent")
    launch = AgentLaunch(WINDOWS_LAUNCH.python, GATEWAY, WINDOWS_LAUNCH.token_file, "windows", root)
    arguments = _task(task_xml(launch, user_id=USER)).findtext(
        "t:Actions/t:Exec/t:Arguments", namespaces=NS
    )
    assert arguments is not None
    assert f'--install-root "{root}" --gateway' in arguments


def test_task_xml_escapes_markup_in_values() -> None:
    launch = AgentLaunch(
        WINDOWS_LAUNCH.python,
        "https://gw.example/?a=1&b=<2>",
        WINDOWS_LAUNCH.token_file,
        "windows",
        WINDOWS_LAUNCH.install_root,
    )
    task = _task(task_xml(launch, user_id="A&B\\<c>"))
    arguments = task.findtext("t:Actions/t:Exec/t:Arguments", namespaces=NS)
    assert arguments is not None
    assert "https://gw.example/?a=1&b=<2>" in arguments
    assert task.findtext("t:Principals/t:Principal/t:UserId", namespaces=NS) == "A&B\\<c>"


def test_task_xml_file_is_utf16_le_with_bom_as_declared() -> None:
    data = task_xml_bytes(task_xml(WINDOWS_LAUNCH, user_id=USER))
    assert data.startswith(b"\xff\xfe<\x00?\x00x\x00m\x00l\x00")
    assert data[2:].decode("utf-16-le").startswith('<?xml version="1.0" encoding="UTF-16"?>')


# ---- systemd install flow ---------------------------------------------------------


def _systemd(
    tmp_path: Path, runner: FakeRunner, environment: dict[str, str] | None = None
) -> SystemdUserInstaller:
    return SystemdUserInstaller(runner, tmp_path / "config", environment or {})


def test_systemd_install_writes_unit_then_reloads_and_enables(tmp_path: Path) -> None:
    runner = FakeRunner()
    installer = _systemd(tmp_path, runner, {"DISPLAY": ":0", "XAUTHORITY": "/x/auth"})
    installer.install(LINUX_LAUNCH)
    unit_path = tmp_path / "config" / "systemd" / "user" / UNIT_NAME
    assert unit_path.read_text() == systemd_unit(LINUX_LAUNCH)
    assert runner.commands == [
        ["systemctl", "--user", "show-environment"],
        ["systemctl", "--user", "import-environment", "DISPLAY", "XAUTHORITY"],
        ["systemctl", "--user", "daemon-reload"],
        ["systemctl", "--user", "enable", "--now", UNIT_NAME],
    ]


def test_systemd_install_imports_only_the_variables_that_are_set(tmp_path: Path) -> None:
    runner = FakeRunner()
    _systemd(tmp_path, runner, {"DISPLAY": ":1"}).install(LINUX_LAUNCH)
    assert ["systemctl", "--user", "import-environment", "DISPLAY"] in runner.commands


def test_systemd_install_without_display_imports_nothing(tmp_path: Path) -> None:
    runner = FakeRunner()
    _systemd(tmp_path, runner).install(LINUX_LAUNCH)
    assert not any("import-environment" in command for command in runner.commands)


def test_systemd_install_without_user_session_fails_in_one_line(tmp_path: Path) -> None:
    no_bus = CommandResult(1, "", "Failed to connect to bus: No medium found\n")
    runner = FakeRunner({("systemctl", "--user", "show-environment"): no_bus})
    with pytest.raises(InstallError) as failed:
        _systemd(tmp_path, runner).install(LINUX_LAUNCH)
    message = str(failed.value)
    assert message.startswith("no systemd user session")
    assert "Failed to connect to bus: No medium found" in message
    assert "\n" not in message
    assert not (tmp_path / "config").exists()


def test_systemd_install_without_systemctl_says_no_systemd(tmp_path: Path) -> None:
    runner = FakeRunner()
    runner.missing.add("systemctl")
    with pytest.raises(InstallError, match="does not use systemd"):
        _systemd(tmp_path, runner).install(LINUX_LAUNCH)


def test_systemd_enable_failure_names_the_command_and_reason(tmp_path: Path) -> None:
    refused = CommandResult(1, "", "Failed to enable unit: Unit file is masked.\n")
    runner = FakeRunner({("systemctl", "--user", "enable"): refused})
    with pytest.raises(InstallError) as failed:
        _systemd(tmp_path, runner).install(LINUX_LAUNCH)
    assert str(failed.value) == (
        f"`systemctl --user enable --now {UNIT_NAME}` failed: "
        "Failed to enable unit: Unit file is masked."
    )


def test_systemd_uninstall_disables_then_removes_the_unit(tmp_path: Path) -> None:
    runner = FakeRunner()
    installer = _systemd(tmp_path, runner)
    installer.install(LINUX_LAUNCH)
    runner.commands.clear()
    installer.uninstall()
    assert not installer.unit_path.exists()
    assert runner.commands == [
        ["systemctl", "--user", "show-environment"],
        ["systemctl", "--user", "disable", "--now", UNIT_NAME],
        ["systemctl", "--user", "daemon-reload"],
    ]


def test_systemd_uninstall_when_not_installed_runs_nothing(tmp_path: Path) -> None:
    runner = FakeRunner()
    message = _systemd(tmp_path, runner).uninstall()
    assert message.startswith("not installed")
    assert runner.commands == []


def test_systemd_uninstall_keeps_the_unit_when_disable_fails(tmp_path: Path) -> None:
    runner = FakeRunner()
    installer = _systemd(tmp_path, runner)
    installer.install(LINUX_LAUNCH)
    runner.answers[("systemctl", "--user", "disable")] = CommandResult(1, "", "boom\n")
    with pytest.raises(InstallError, match="boom"):
        installer.uninstall()
    # Removing the file now would leave its WantedBy link behind, enabled.
    assert installer.unit_path.exists()


# ---- Task Scheduler install flow --------------------------------------------------


def test_task_install_creates_from_xml_then_runs(tmp_path: Path) -> None:
    runner = FakeRunner()
    TaskSchedulerInstaller(runner, tmp_path, USER).install(WINDOWS_LAUNCH)
    create, run = runner.commands
    xml_path = create[create.index("/XML") + 1]
    assert create == ["schtasks", "/Create", "/XML", xml_path, "/TN", TASK_NAME, "/F"]
    assert run == ["schtasks", "/Run", "/TN", TASK_NAME]
    assert runner.files_seen["xml"] == task_xml_bytes(task_xml(WINDOWS_LAUNCH, user_id=USER))


def test_task_install_removes_its_xml_file(tmp_path: Path) -> None:
    TaskSchedulerInstaller(FakeRunner(), tmp_path, USER).install(WINDOWS_LAUNCH)
    assert list(tmp_path.iterdir()) == []


def test_task_create_failure_reports_schtasks_reason_and_cleans_up(tmp_path: Path) -> None:
    denied = CommandResult(1, "", "ERROR: Access is denied.\r\n")
    runner = FakeRunner({("schtasks", "/Create"): denied})
    with pytest.raises(InstallError) as failed:
        TaskSchedulerInstaller(runner, tmp_path, USER).install(WINDOWS_LAUNCH)
    assert str(failed.value).endswith("failed: ERROR: Access is denied.")
    assert list(tmp_path.iterdir()) == []
    assert len(runner.commands) == 1


def test_task_install_without_schtasks_fails_in_one_line(tmp_path: Path) -> None:
    runner = FakeRunner()
    runner.missing.add("schtasks")
    with pytest.raises(InstallError, match=r"^schtasks cannot run"):
        TaskSchedulerInstaller(runner, tmp_path, USER).install(WINDOWS_LAUNCH)


def test_task_uninstall_ends_then_deletes(tmp_path: Path) -> None:
    runner = FakeRunner()
    TaskSchedulerInstaller(runner, tmp_path, USER).uninstall()
    assert runner.commands == [
        ["schtasks", "/Query", "/TN", TASK_NAME],
        ["schtasks", "/End", "/TN", TASK_NAME],
        ["schtasks", "/Delete", "/TN", TASK_NAME, "/F"],
    ]


def test_task_uninstall_of_a_stopped_task_still_deletes(tmp_path: Path) -> None:
    not_running = CommandResult(1, "", "ERROR: The task is not running.\r\n")
    runner = FakeRunner({("schtasks", "/End"): not_running})
    TaskSchedulerInstaller(runner, tmp_path, USER).uninstall()
    assert runner.commands[-1] == ["schtasks", "/Delete", "/TN", TASK_NAME, "/F"]


def test_task_uninstall_when_not_installed_deletes_nothing(tmp_path: Path) -> None:
    missing = CommandResult(1, "", "ERROR: The system cannot find the file specified.\r\n")
    runner = FakeRunner({("schtasks", "/Query"): missing})
    message = TaskSchedulerInstaller(runner, tmp_path, USER).uninstall()
    assert message.startswith("not installed")
    assert runner.commands == [["schtasks", "/Query", "/TN", TASK_NAME]]


# ---- choosing the installer -------------------------------------------------------


def test_windows_gets_the_task_installer(tmp_path: Path) -> None:
    environment = {"USERNAME": "alice", "USERDOMAIN": "DESKTOP-1"}
    chosen = installer_for(
        "win32", environment, home=tmp_path, temp_dir=tmp_path, runner=FakeRunner()
    )
    assert isinstance(chosen, TaskSchedulerInstaller)


def test_linux_gets_the_systemd_installer_under_xdg_config_home(tmp_path: Path) -> None:
    environment = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    chosen = installer_for(
        "linux", environment, home=tmp_path, temp_dir=tmp_path, runner=FakeRunner()
    )
    assert isinstance(chosen, SystemdUserInstaller)
    assert chosen.unit_path == tmp_path / "xdg" / "systemd" / "user" / UNIT_NAME


def test_other_platforms_are_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match="darwin"):
        installer_for("darwin", {}, home=tmp_path, temp_dir=tmp_path, runner=FakeRunner())


def test_relative_xdg_config_home_falls_back_to_dot_config(tmp_path: Path) -> None:
    assert config_home({"XDG_CONFIG_HOME": "rel/conf"}, tmp_path) == tmp_path / ".config"


def test_windows_user_id_is_domain_backslash_user() -> None:
    assert windows_user_id({"USERNAME": "alice", "USERDOMAIN": "DESKTOP-1"}) == USER


def test_windows_user_id_without_username_is_refused() -> None:
    with pytest.raises(InstallError, match="USERNAME"):
        windows_user_id({"USERDOMAIN": "DESKTOP-1"})


def test_launch_for_makes_the_token_path_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    launch = launch_for(
        "linux", Path("/usr/bin/python3"), GATEWAY, Path("rig.token"), "x11", Path("root")
    )
    assert launch.token_file == tmp_path / "rig.token"
    assert launch.install_root == tmp_path / "root"


# ---- the install root --------------------------------------------------------------


def test_windows_install_root_is_under_local_app_data() -> None:
    environment = {"LOCALAPPDATA": "C:\\Users\\alice\\AppData\\Local"}
    root = default_install_root("win32", environment, PureWindowsPath("C:\\Users\\alice"))
    assert root == PureWindowsPath("C:\\Users\\alice\\AppData\\Local\\Rigway\\agent")


def test_windows_install_root_without_local_app_data_is_under_the_profile() -> None:
    root = default_install_root("win32", {}, PureWindowsPath("C:\\Users\\alice"))
    assert root == PureWindowsPath("C:\\Users\\alice\\AppData\\Local\\Rigway\\agent")


def test_linux_install_root_is_under_xdg_data_home() -> None:
    root = default_install_root("linux", {"XDG_DATA_HOME": "/data"}, PurePosixPath("/home/a"))
    assert root == PurePosixPath("/data/rigway/agent")


def test_relative_xdg_data_home_falls_back_to_local_share() -> None:
    root = default_install_root("linux", {"XDG_DATA_HOME": "rel"}, PurePosixPath("/home/a"))
    assert root == PurePosixPath("/home/a/.local/share/rigway/agent")


def _used_install_root(tmp_path: Path) -> InstallRoot:
    """An install root as a running launcher leaves it: a committed version and one
    that failed, the health marker, a staged download."""
    installs = InstallRoot(tmp_path / "agent")
    for version in ("1.0.0", "2.0.0"):
        installs.version_dir(version).mkdir(parents=True)
    installs.begin_trial("1.0.0")
    installs.commit_trial("1.0.0")
    installs.begin_trial("2.0.0")
    installs.roll_back("2.0.0")
    write_health_marker(installs.health_file, 1234)
    installs.staging_dir.mkdir()
    (installs.staging_dir / "rigway-3.0.0-py3-none-any.whl").write_bytes(b"wheel")
    return installs


def test_purge_removes_an_install_root_and_its_versions(tmp_path: Path) -> None:
    installs = _used_install_root(tmp_path)
    message = purge_install_root(installs.root)
    assert not installs.root.exists()
    assert message == f"removed the installed versions ({installs.root})"


def test_purge_leaves_a_folder_holding_anything_else(tmp_path: Path) -> None:
    installs = _used_install_root(tmp_path)
    (installs.root / "thesis.docx").write_bytes(b"not the agent's")
    with pytest.raises(InstallError, match=r"'thesis\.docx', which is not the agent's"):
        purge_install_root(installs.root)
    assert installs.is_installed("1.0.0")


def test_purge_of_a_missing_install_root_says_so(tmp_path: Path) -> None:
    assert purge_install_root(tmp_path / "none").startswith("no installed versions to remove")


def test_purge_of_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "agent").write_text("x")
    with pytest.raises(InstallError, match="not an install root"):
        purge_install_root(tmp_path / "agent")
    assert (tmp_path / "agent").exists()
