"""`rigway agent install/uninstall` on Linux, through the command itself: a stand-in
`systemctl` on PATH records what it is asked and answers as told; the unit lands in a
temporary XDG_CONFIG_HOME, the install root in a temporary XDG_DATA_HOME."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from rigway.agent.install import UNIT_NAME
from rigway.cli.agent import agent_app

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="systemd flow")

GATEWAY = "https://gw.example"
TOKEN = "rgwr_" + "ab" * 32


@dataclass
class Rig:
    token_file: Path
    config_home: Path
    data_home: Path
    calls: Path  # one line per systemctl call
    env: dict[str, str]

    @property
    def unit(self) -> Path:
        return self.config_home / "systemd" / "user" / UNIT_NAME

    @property
    def install_root(self) -> Path:
        return self.data_home / "rigway" / "agent"

    def systemctl_calls(self) -> list[str]:
        return self.calls.read_text().splitlines() if self.calls.exists() else []

    def invoke(self, *args: str) -> Result:
        return CliRunner().invoke(agent_app, list(args), env=self.env)

    def install(self, *extra: str) -> Result:
        return self.invoke(
            "install", "--gateway", GATEWAY, "--token-file", str(self.token_file), *extra
        )


def _fake_systemctl(bin_dir: Path, calls: Path, exit_status: int, stderr: str) -> None:
    script = bin_dir / "systemctl"
    script.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{calls}"\n'
        f"printf '%s\\n' '{stderr}' >&2\n"
        f"exit {exit_status}\n"
    )
    script.chmod(0o755)


def _rig(tmp_path: Path, *, exit_status: int = 0, stderr: str = "") -> Rig:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "systemctl.calls"
    _fake_systemctl(bin_dir, calls, exit_status, stderr)
    token_file = tmp_path / "rig.token"
    token_file.write_text(TOKEN)
    config_home = tmp_path / "config"
    data_home = tmp_path / "data"
    env = {
        "PATH": str(bin_dir),
        "XDG_CONFIG_HOME": str(config_home),
        "XDG_DATA_HOME": str(data_home),
        "DISPLAY": ":5",
    }
    return Rig(token_file, config_home, data_home, calls, env)


def test_install_writes_the_unit_and_enables_it(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    result = rig.install()
    assert result.exit_code == 0, result.stderr
    assert rig.systemctl_calls() == [
        "--user show-environment",
        "--user import-environment DISPLAY",
        "--user daemon-reload",
        f"--user enable --now {UNIT_NAME}",
    ]
    unit = rig.unit.read_text()
    assert f'"--token-file" "{rig.token_file}"' in unit
    assert '"--backend" "x11"' in unit


def test_install_never_writes_the_token(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    result = rig.install()
    assert result.exit_code == 0, result.stderr
    assert TOKEN not in rig.unit.read_text()
    assert TOKEN not in result.output


def test_install_without_user_session_exits_1_with_one_line(tmp_path: Path) -> None:
    rig = _rig(tmp_path, exit_status=1, stderr="Failed to connect to bus: No medium found")
    result = rig.install()
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("install failed: no systemd user session")
    assert not rig.unit.exists()


def test_install_with_missing_token_file_exits_2(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    rig.token_file.unlink()
    result = rig.install()
    assert result.exit_code == 2
    assert "cannot read the rig token" in result.stderr
    assert rig.systemctl_calls() == []


def test_install_with_empty_token_file_says_pair_first(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    rig.token_file.write_text("\n")
    result = rig.install()
    assert result.exit_code == 2
    assert "pair this rig first" in result.stderr


def test_install_with_bad_gateway_url_exits_2(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    result = rig.invoke("install", "--gateway", "gw.example", "--token-file", str(rig.token_file))
    assert result.exit_code == 2
    assert "cannot install" in result.stderr
    assert rig.systemctl_calls() == []


def test_install_with_unknown_backend_exits_2(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    result = rig.install("--backend", "wayland")
    assert result.exit_code == 2
    assert "--backend must be one of" in result.stderr


def test_uninstall_disables_and_removes_the_unit(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    assert rig.install().exit_code == 0
    result = rig.invoke("uninstall")
    assert result.exit_code == 0, result.stderr
    assert not rig.unit.exists()
    assert f"--user disable --now {UNIT_NAME}" in rig.systemctl_calls()


def test_uninstall_when_not_installed_exits_0(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    result = rig.invoke("uninstall")
    assert result.exit_code == 0
    assert result.stdout.startswith("not installed")
    assert rig.systemctl_calls() == []


def test_install_registers_the_launcher_with_the_run_options(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    result = rig.install()
    assert result.exit_code == 0, result.stderr
    exec_start = next(line for line in rig.unit.read_text().splitlines() if "ExecStart" in line)
    assert exec_start.endswith(
        f'"agent" "launch" "--install-root" "{rig.install_root}" '
        f'"--gateway" "{GATEWAY}" "--token-file" "{rig.token_file}" "--backend" "x11"'
    )


def test_install_makes_the_install_root_and_says_where_versions_go(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    result = rig.install()
    assert result.exit_code == 0, result.stderr
    assert rig.install_root.is_dir()
    assert f"it updates itself: new versions go to {rig.install_root}" in result.stdout


def test_install_root_option_is_registered_absolute(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    chosen = tmp_path / "elsewhere"
    result = rig.install("--install-root", str(chosen))
    assert result.exit_code == 0, result.stderr
    assert f'"--install-root" "{chosen}"' in rig.unit.read_text()
    assert not rig.install_root.exists()


def test_uninstall_keeps_the_installed_versions_and_says_so(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    assert rig.install().exit_code == 0
    (rig.install_root / "versions" / "1.0.0").mkdir(parents=True)
    result = rig.invoke("uninstall")
    assert result.exit_code == 0, result.stderr
    assert (rig.install_root / "versions" / "1.0.0").is_dir()
    assert f"installed versions stay in {rig.install_root} (`--purge` removes them)" in (
        result.stdout
    )


def test_uninstall_with_purge_removes_the_installed_versions(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    assert rig.install().exit_code == 0
    (rig.install_root / "versions" / "1.0.0").mkdir(parents=True)
    result = rig.invoke("uninstall", "--purge")
    assert result.exit_code == 0, result.stderr
    assert not rig.install_root.exists()
    assert not rig.unit.exists()
    assert "removed the installed versions" in result.stdout


def test_uninstall_purge_of_a_folder_holding_other_files_exits_1(tmp_path: Path) -> None:
    rig = _rig(tmp_path)
    chosen = tmp_path / "home"
    (chosen / "Documents").mkdir(parents=True)
    result = rig.invoke("uninstall", "--purge", "--install-root", str(chosen))
    assert result.exit_code == 1
    assert "'Documents', which is not the agent's" in result.stderr
    assert (chosen / "Documents").is_dir()
