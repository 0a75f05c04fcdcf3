"""The login script file: steps read, values from the environment, never shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from archiver.browser.steps import Click, Fill, Goto, WaitFor
from archiver.errors import SettingsError
from archiver.login.script import read_script

PASSWORD = "correct horse battery staple"

SCRIPT = """
# the members' login
[[step]]
goto = "https://members.example.org/login"

[[step]]
fill = "#username"
value = "archivist"

[[step]]
fill = "input[name=password]"
env = "MEMBERS_PASSWORD"
timeout = 5

[[step]]
click = "button[type=submit]"

[[step]]
wait = "#members-area"
timeout = 45.5
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "login.toml"
    path.write_text(text)
    return path


def test_a_script_reads_as_its_steps(tmp_path: Path) -> None:
    script = read_script(write(tmp_path, SCRIPT), {"MEMBERS_PASSWORD": PASSWORD})
    assert script.steps == (
        Goto("https://members.example.org/login"),
        Fill("#username", "archivist", source="the script"),
        Fill("input[name=password]", PASSWORD, 5.0, "$MEMBERS_PASSWORD"),
        Click("button[type=submit]"),
        WaitFor("#members-area", 45.5),
    )
    assert script.start_url == "https://members.example.org/login"
    # what is typed is never shown
    assert PASSWORD not in repr(script)
    assert PASSWORD not in script.steps[2].describe()
    assert script.steps[2].describe() == "fill input[name=password] from $MEMBERS_PASSWORD"


def test_a_variable_that_is_not_set_is_named(tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as caught:
        read_script(write(tmp_path, SCRIPT), {})
    assert str(caught.value) == (
        f"--login-script: {tmp_path / 'login.toml'}: step 3: fills input[name=password] from "
        "$MEMBERS_PASSWORD, which is not set"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "no \\[\\[step\\]\\]"),
        ('title = "x"\n[[step]]\ngoto = "https://a.example/"\n', "unknown key 'title'"),
        ('[[step]]\ngoto = "https://a.example/"\nclick = "#b"\n', "step 1: give exactly one of"),
        ('[[step]]\nclick = "#b"\nenv = "X"\n', "step 1: unknown key 'env' for a click step"),
        ('[[step]]\nfill = "#a"\n', "step 1: a fill takes env .* or value"),
        ('[[step]]\nfill = "#a"\nenv = "X"\nvalue = "y"\n', "a fill takes env"),
        ('[[step]]\nclick = "button["\n', "step 1: 'button\\[' is not a CSS selector"),
        ('[[step]]\ngoto = "ftp://a.example/"\n', "step 1: 'ftp://a.example/' is not an http"),
        ('[[step]]\nwait = "#a"\ntimeout = 0\n', "timeout must be more than 0"),
        ('[[step]]\nwait = "#a"\ntimeout = "30s"\n', "timeout is a number of seconds"),
        ("[[step]\n", "is not valid TOML"),
    ],
)
def test_a_wrong_script_is_one_line_naming_the_step(
    tmp_path: Path, text: str, message: str
) -> None:
    with pytest.raises(SettingsError, match=message) as caught:
        read_script(write(tmp_path, text), {"X": PASSWORD})
    assert "\n" not in str(caught.value)
    assert PASSWORD not in str(caught.value)


def test_a_missing_script_is_named(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="no such file"):
        read_script(tmp_path / "absent.toml", {})
