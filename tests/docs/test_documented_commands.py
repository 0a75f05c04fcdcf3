"""Every command line the documentation shows is run by a test, or marked illustrative.

The rule that finds them is ``tests/docs/documented.py``'s; how a test says which it runs is
``tests/docs/registry.py``'s; ``python -m tests.docs`` prints the table. The tests below the
first three pin the rule itself on small texts.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.docs.coverage import Coverage, coverage, stale_message, unrun_message
from tests.docs.documented import REPO, config_commands, markdown_commands
from tests.docs.registry import documents, registrations
from tests.docs.shell import DocShell, NotDocumentedError


@pytest.fixture(scope="module")
def found() -> Coverage:
    return coverage()


def test_every_documented_command_is_run_by_a_test_or_marked_illustrative(found: Coverage) -> None:
    assert found.commands, "the rule found no command line at all: is it broken?"
    if found.unrun:
        pytest.fail(unrun_message(found.unrun), pytrace=False)


def test_every_marker_names_a_command_the_documentation_shows(found: Coverage) -> None:
    assert found.registrations, "no test is marked documents(...): is the registry broken?"
    if found.stale:
        pytest.fail(stale_message(found.stale), pytrace=False)


def test_every_illustrative_marker_marks_a_command_and_says_why(found: Coverage) -> None:
    wrong = [
        f"{o.path}:{o.line}: illustrative: after no command on its line" for o in found.orphans
    ]
    wrong += [f"{c.where}: illustrative: without a reason" for c in found.unexplained]
    if wrong:
        pytest.fail("\n".join(wrong), pytrace=False)


@documents("python -m tests.docs")
def test_the_table_of_documented_commands(doc: DocShell, found: Coverage) -> None:
    done = doc.run("python -m tests.docs", cwd=REPO)
    assert done.returncode == 0, done.stderr
    for command in found.commands:
        assert f"{command.where}: {command.text}\n" in done.stdout, command
    assert "NOT RUN" not in done.stdout
    assert "tests/docs/test_readme_first_crawl.py::test_verify" in done.stdout


# ------------------------------------------------------------------------------- the rule


def texts(markdown: str) -> list[tuple[int, str, str | None]]:
    commands, _ = markdown_commands(textwrap.dedent(markdown))
    return [(c.line, c.text, c.illustrative) for c in commands]


def test_shell_blocks_every_line_continued_lines_joined_comments_cut() -> None:
    assert texts(
        """\
        ```bash
        archiver crawl https://example.org/ --output crawls/day2 \\
            --dedup-from crawls/day1   # a comment
        # a comment line
        $ curl -s 127.0.0.1:9811/metrics | grep '#x'
        pip install pywb   # illustrative: another program, kept honest anyway
        ```
        """
    ) == [
        (
            2,
            "archiver crawl https://example.org/ --output crawls/day2 --dedup-from crawls/day1",
            None,
        ),
        (5, "curl -s 127.0.0.1:9811/metrics | grep '#x'", None),
        (6, "pip install pywb", "another program, kept honest anyway"),
    ]


def test_other_blocks_only_command_words_and_never_synopses() -> None:
    assert texts(
        """\
        ```
        scripts/fuzz --list          # the targets
        archiver crawl --processes N (supervisor)
        ├─ keeper ── redis-server
        ```
        ```toml
        archiver = "crawl"
        ```
        ```python
        archiver crawl x
        ```
        """
    ) == [(2, "scripts/fuzz --list", None)]


def test_code_spans_commands_synopses_names_and_markers() -> None:
    assert texts(
        """\
        Run `archiver verify crawls/example`, not `archiver verify DIR` (a synopsis) nor
        `archiver index DIR [DIR...]`; `archiver verify` names the command, `archiver/run` is a
        path, `crawls/example` a directory. A span may break: `archiver report
        crawls/example`. `scripts/bench` <!-- illustrative: takes an hour --> and
        `ARCHIVER_PYWB=~/.pywb archiver replay crawls/example`; `apt-get install chromium`.
        `archiver crawl https://a.example/ --exclude '[?&]share='` quotes its brackets.
        """
    ) == [
        (1, "archiver verify crawls/example", None),
        (3, "archiver report crawls/example", None),
        (4, "scripts/bench", "takes an hour"),
        (5, "ARCHIVER_PYWB=~/.pywb archiver replay crawls/example", None),
        (6, "archiver crawl https://a.example/ --exclude '[?&]share='", None),
    ]


def test_a_marker_after_no_command_is_reported() -> None:
    _, orphans = markdown_commands("Nothing to run here <!-- illustrative: why -->\n")
    assert [o.line for o in orphans] == [1]


def test_config_files_comments_exec_lines_and_crontab_entries() -> None:
    commands, orphans = config_commands(
        textwrap.dedent(
            """\
            # Run it by hand:
            #   archiver crawl --config config/example.toml
            # `systemctl start x@y` runs it now (illustrative: systemd is not init here)
            # Use a copy: archiver crawl --config my.toml URL
            # archiver: a comment that names the program; the SIGTERM goes to archiver alone
            # archiver reads this file at start (a sentence, not a command)
            [Service]
            ExecStart=/opt/archiver/.venv/bin/archiver crawl --config /etc/a/%i.toml --quiet
            CRON_TZ=UTC
            15 2  *   *   *      archiver  /opt/archiver/.venv/bin/archiver crawl --quiet
            """
        )
    )
    assert [(c.line, c.text, c.illustrative) for c in commands] == [
        (2, "archiver crawl --config config/example.toml", None),
        (3, "systemctl start x@y", "systemd is not init here"),
        (8, "/opt/archiver/.venv/bin/archiver crawl --config /etc/a/%i.toml --quiet", None),
        (10, "/opt/archiver/.venv/bin/archiver crawl --quiet", None),
    ]
    assert orphans == []


def test_the_registry_reads_markers_from_source(tmp_path: Path) -> None:
    (tmp_path / "tests" / "x").mkdir(parents=True)
    (tmp_path / "tests" / "x" / "test_a.py").write_text(
        textwrap.dedent(
            """\
            import pytest
            from tests.docs.registry import documents
            LINE = "archiver crawl --help"

            @documents("archiver verify crawls/example", LINE)
            def test_one(): ...

            @pytest.mark.parametrize("x", [pytest.param(1, marks=documents("scripts/check"))])
            def test_two(x): ...

            class TestThree:
                @pytest.mark.documents("curl -s x")
                async def test_three(self): ...

            @documents("not a test")
            def helper(): ...
            """
        )
    )
    found = [(r.test, r.commands) for r in registrations(tmp_path)]
    assert found == [
        (
            "tests/x/test_a.py::test_one",
            ("archiver verify crawls/example", "archiver crawl --help"),
        ),
        ("tests/x/test_a.py::test_two", ("scripts/check",)),
        ("tests/x/test_a.py::TestThree::test_three", ("curl -s x",)),
    ]


def test_the_shell_runs_documented_commands_only_and_replaces_only_urls_and_paths(
    doc: DocShell,
) -> None:
    with pytest.raises(NotDocumentedError, match="not a command line of the documentation"):
        doc.prepare("archiver crawl --overwrite https://example.org/")
    line = "archiver crawl https://example.org/ --output crawls/example --processes auto"
    with pytest.raises(NotDocumentedError, match="only remote URLs and machine paths"):
        doc.prepare(line, {"auto": "1"})
    with pytest.raises(NotDocumentedError, match="does not occur"):
        doc.prepare(line, {"https://elsewhere.example/": "http://127.0.0.1:1/"})
    assert doc.prepare(line, {"https://example.org/": "http://127.0.0.1:1/"}) == (
        "archiver crawl http://127.0.0.1:1/ --output crawls/example --processes auto"
    )
