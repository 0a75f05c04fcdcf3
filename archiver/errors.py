"""The archiver exception tree. No third-party exception leaves the module that caused it.

::

    ArchiverError
    ├── SettingsError            a wrong option or config value (exit 2, one line, no traceback)
    ├── OutputError              the output directory cannot be used as asked
    │   ├── OutputExistsError    it holds another crawl and neither resume nor --overwrite applies
    │   └── LockedError          another run holds the job/output lock
    ├── StateError               a crawl's state disagrees with itself (its frontier database
    │                            missing, damaged or not its own beside its WARC files): exit 2,
    │                            with the command that rebuilds it
    ├── WriteError               the WARC writer could not write (disk full, I/O error): stops
    │                            the crawl loudly, leaves closed files valid, the state resumable
    ├── FrontierError            the frontier backend failed (SQLite, Redis)
    │   └── FrontierUnavailableError  the backend cannot be reached (Redis down at start)
    ├── WarcFormatError          a WARC file is not what it should be (verify, repair, index)
    ├── SigningError             a WACZ could not be signed (the signing server is down, slow
    │                            or answered wrongly; the key cannot be used): left unsigned
    ├── SignatureError           a WACZ signature does not hold (verify)
    ├── LoginError               a login (a login script, the login page) did not give a session
    ├── SessionEndedError        the crawl's login session ended (a logged-out sign): the crawl
    │                            stops resumably, the page that showed it not archived
    └── FetchError               one fetch failed; ``reason`` is a :class:`models.FailReason`
        ├── BlockedAddressError  the connection would reach an address the SSRF guard refuses
        ├── ProtocolError        the server's bytes are not HTTP we can read (bad status line…)
        └── HeadersTooLargeError the response header block exceeded the limits
"""

from __future__ import annotations

from archiver.models import FailReason


class ArchiverError(Exception):
    """Base class for every error archiver raises on purpose."""


class SettingsError(ArchiverError):
    """A setting has a wrong value; the message names the option and what it accepts."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option


class OutputError(ArchiverError):
    """The output directory cannot be used as asked."""


class OutputExistsError(OutputError):
    """The output directory holds something that is neither empty nor a resumable crawl."""


class LockedError(OutputError):
    """Another run holds the lock on this output directory or job."""


class StateError(ArchiverError):
    """A crawl's state does not agree with itself (its frontier database missing, damaged, an
    older copy or another crawl's, while its WARC files are there): resuming would start over
    or skip ahead. The message says what rebuilds it."""


class WriteError(ArchiverError):
    """Writing WARC data failed. The crawl stops; what was closed stays valid."""


class FrontierError(ArchiverError):
    """The frontier backend failed."""


class FrontierUnavailableError(FrontierError):
    """The frontier backend cannot be reached."""


class WarcFormatError(ArchiverError):
    """A WARC file is damaged or not a WARC file."""


class SigningError(ArchiverError):
    """A package could not be signed; the message says why in one line."""


class SignatureError(ArchiverError):
    """A signature does not verify; the message names the check that failed."""


class LoginError(ArchiverError):
    """A login could not be completed; the message names the step, never a value typed."""


class SessionEndedError(ArchiverError):
    """A response showed that the crawl's login session has ended (``--logged-out``,
    ``--login-check``). The lease that met it stays in flight, so a resumed crawl (after a new
    login) fetches its URL again; nothing of it was archived."""

    def __init__(self, url: str, sign: str, hint: str = "") -> None:
        message = f"the login session has ended: {url} {sign}"
        super().__init__(f"{message}; {hint}" if hint else message)
        self.url = url
        self.sign = sign


class FetchError(ArchiverError):
    """One fetch failed. ``reason`` is what the log and the summary count."""

    reason: FailReason = FailReason.CONNECT

    def __init__(self, message: str, reason: FailReason | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason


class BlockedAddressError(FetchError):
    """The SSRF guard refused the address a URL resolves to."""

    reason = FailReason.BLOCKED_ADDRESS


class ProtocolError(FetchError):
    """The response is not HTTP/1.x we can read (HTTP/0.9, a broken status line)."""

    reason = FailReason.BAD_RESPONSE


class HeadersTooLargeError(FetchError):
    """The response header block is over the size, line or count limit."""

    reason = FailReason.HEADERS_TOO_LARGE
