"""``python -m tests.docs``: every documented command line and what proves it.

One line per command: where the documentation shows it, the command, and the tests marked as
running it, or the reason it is illustrative, or ``NOT RUN``. Exit status 1 when a command is
run by no test or a marker names a command the documentation no longer shows.
"""

from __future__ import annotations

import sys

from tests.docs.coverage import coverage, stale_message, unrun_message


def main() -> int:
    found = coverage()
    for command in found.commands:
        if command.illustrative is not None:
            proof = f"illustrative: {command.illustrative}"
        else:
            proof = ", ".join(found.tests.get(command.text, [])) or "NOT RUN"
        print(f"{command.where}: {command.text}\n    {proof}")
    failed = False
    if found.unrun:
        print("\n" + unrun_message(found.unrun), file=sys.stderr)
        failed = True
    if found.stale:
        print("\n" + stale_message(found.stale), file=sys.stderr)
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
