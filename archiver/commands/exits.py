"""The exit codes of the ``archiver`` command (README, "Exit codes"), and the code a crawl's
status ends the command with. A scheduler reads them (cron mails on a non-zero one, systemd marks
the unit failed), and so does the supervisor of ``--processes N``, which runs each crawler
process as ``archiver crawl-process``: 0 and 3 there mean the process stopped as asked, 1, 2
and 4 that it failed, anything else (or a signal) that it died.
"""

from __future__ import annotations

from archiver.run.output import STATUS_COMPLETED, STATUS_INTERRUPTED, STATUS_LIMIT

#: completed, or stopped at a ``--max-*`` limit; a command that did what it was asked
EXIT_OK = 0
#: failed (every fetch of a first run failed, a write or index error, a bug, a bad archive)
EXIT_FAILED = 1
#: a usage error: a setting, an argument or a file the command was given
EXIT_USAGE = 2
#: interrupted (a signal, a full disk, a frontier that failed): the same command resumes it
EXIT_INTERRUPTED = 3
#: the output directory (or the job) is locked by another run
EXIT_LOCKED = 4

_BY_STATUS = {
    STATUS_COMPLETED: EXIT_OK,
    STATUS_LIMIT: EXIT_OK,
    STATUS_INTERRUPTED: EXIT_INTERRUPTED,
}


def exit_code(status: str) -> int:
    """The exit code a crawl that ended with ``status`` ends the command with."""
    return _BY_STATUS.get(status, EXIT_FAILED)


__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_LOCKED",
    "EXIT_OK",
    "EXIT_USAGE",
    "exit_code",
]
