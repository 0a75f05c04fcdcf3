"""archiver.config.settings: one frozen Settings from TOML and the command line, and the
generated default config that lists every setting."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from archiver.config.settings import default_config_text, load_settings, parse_duration, parse_size
from archiver.errors import SettingsError
from tests.support.tools import REPO_ROOT


def test_settings_parsing_and_errors(tmp_path: Path) -> None:
    assert (
        parse_size("1GB") == 10**9 and parse_size("512KiB") == 512 * 1024 and parse_size(0) is None
    )
    assert parse_duration("500ms") == 0.5 and parse_duration("2h") == 7200
    config = tmp_path / "c.toml"
    config.write_text('[crawl]\nworkers = 4\n[politeness]\nper_host_delay = "2s"\n')
    settings = load_settings(config, {"workers": "8"})
    assert settings.workers == 8 and settings.per_host_delay == 2.0
    config.write_text("[crawl]\nworker = 4\n")
    with pytest.raises(SettingsError, match=r"unknown setting \[crawl\] worker"):
        load_settings(config)
    with pytest.raises(SettingsError, match="--robots: must be one of obey, ignore"):
        load_settings(None, {"robots": "sometimes"})


def test_default_config_is_valid_toml_with_every_setting() -> None:
    text = default_config_text()
    setting_line = re.compile(r"^# [a-z_]+ = ")
    uncommented = "\n".join(
        line[2:] if setting_line.match(line) else line
        for line in text.splitlines()
        if not line.startswith("#") or setting_line.match(line)
    )
    data = tomllib.loads(uncommented)
    assert sum(len(table) for table in data.values()) >= 50


def test_default_config_is_generated_and_current() -> None:
    assert (REPO_ROOT / "config" / "default.toml").read_text() == default_config_text()
    script = str(REPO_ROOT / "scripts" / "gen-default-config")
    check, table = (
        subprocess.run([script, option], capture_output=True, text=True, timeout=120, check=False)
        for option in ("--check", "--markdown")
    )
    assert check.returncode == 0, check.stderr
    assert table.returncode == 0
    assert table.stdout == (REPO_ROOT / "docs" / "settings.md").read_text()
    assert "| `per_host_delay` | `--per-host-delay` | `0.5s` |" in table.stdout


def test_example_config_loads() -> None:
    settings = load_settings(REPO_ROOT / "config" / "example.toml")
    assert settings.seeds and settings.scope == "domain" and settings.heritrix_log


def test_a_toml_boolean_answers_an_on_off_choice(tmp_path: Path) -> None:
    """TOML has booleans: ``sitemaps = false`` means ``off``, as ``--sitemaps off`` does; a
    choice without on/off still wants one of its words."""
    config = tmp_path / "c.toml"
    config.write_text("[scope]\nsitemaps = false\n[output]\nprogress = true\n")
    settings = load_settings(config)
    assert (settings.sitemaps, settings.progress) == ("off", "on")
    config.write_text("[politeness]\nrobots = true\n")
    with pytest.raises(SettingsError, match="must be one of obey, ignore"):
        load_settings(config)
