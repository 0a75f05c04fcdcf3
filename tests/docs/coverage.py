"""Documented commands against the tests that run them: what is missing, what is stale.

Shared by the test that fails on a gap (``test_documented_commands.py``) and by
``python -m tests.docs``, which prints the whole table.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from tests.docs.documented import REPO, DocCommand, OrphanMarker, scan
from tests.docs.registry import Registration, registrations


@dataclasses.dataclass(frozen=True)
class Coverage:
    commands: list[DocCommand]
    tests: dict[str, list[str]]  #: command text -> the tests marked as running it
    registrations: list[Registration]
    orphans: list[OrphanMarker]  #: ``illustrative:`` markers with no command before them

    @property
    def unrun(self) -> list[DocCommand]:
        """Commands neither marked illustrative nor run by a test."""
        return [c for c in self.commands if c.illustrative is None and c.text not in self.tests]

    @property
    def unexplained(self) -> list[DocCommand]:
        """Commands marked illustrative without a reason."""
        return [c for c in self.commands if c.illustrative == ""]

    @property
    def stale(self) -> list[tuple[Registration, str]]:
        """Marker texts that the documentation no longer shows."""
        shown = {c.text for c in self.commands}
        return [(r, text) for r in self.registrations for text in r.commands if text not in shown]


def coverage(root: Path = REPO) -> Coverage:
    commands, orphans = scan(root)
    found = registrations(root)
    tests: dict[str, list[str]] = {}
    for registration in found:
        for text in registration.commands:
            tests.setdefault(text, []).append(registration.test)
    return Coverage(commands, tests, found, orphans)


HOW_TO_RUN = """\
For each one, either
  - run it in a test marked with its exact text (anywhere under tests/; tests/docs/ has
    examples, and tests/docs/registry.py the details):

        from tests.docs.registry import documents
        from tests.docs.shell import DocShell, workdir

        @documents({example!r})
        def test_...(doc: DocShell, tmp_path: Path) -> None:
            done = doc.run({example!r}, cwd=workdir(tmp_path),
                           replace={{...remote URL or machine path: the local one...}})
            assert done.returncode == 0 and ...  # what it did: files made, output, server hits

    (doc.run runs it with bash, as written; only URLs and machine paths may be replaced), or
  - when it cannot run here, mark it illustrative in the text, after the command on its line,
    with the reason:
        Markdown prose:       `the command` <!-- illustrative: why it cannot run here -->
        code block, config:   the command   # illustrative: why it cannot run here"""


def unrun_message(unrun: list[DocCommand]) -> str:
    lines = [f"{len(unrun)} documented command line(s) are run by no test:", ""]
    lines += [f"  {c.where}: {c.text}" for c in unrun]
    lines += ["", HOW_TO_RUN.format(example=unrun[0].text)]
    return "\n".join(lines)


def stale_message(stale: list[tuple[Registration, str]]) -> str:
    lines = ["documents(...) markers name command lines the documentation no longer shows:", ""]
    lines += [f"  {r.test} (line {r.line}): {text!r}" for r, text in stale]
    lines += [
        "",
        "Change the marker (and what the test runs) to the command as the documentation now",
        "shows it (python -m tests.docs lists them), or remove the test if the command is gone.",
    ]
    return "\n".join(lines)
