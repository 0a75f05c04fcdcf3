"""Configured secrets: which request headers carry credentials, where they may go, and how they
are kept out of what a crawl publishes.

A crawl of a members-only site is run with ``--header "Authorization: Bearer …"`` or
``--header "Cookie: session=…"``. Two leaks follow unless the crawler takes care (the same rules
as RFC 6265 section 5.4's cookie scoping and curl's dropping ``Authorization`` on a redirect):

* **sending** the credential to every host the crawl touches: the CDN of the page's images, a
  redirect target on another site, a host whose TLS certificate failed verification. Browsers
  scope cookies to their site and curl drops ``Authorization`` on a redirect to another host;
  here a credential header goes only to the hosts of the seeds (and hosts named with
  ``--credential-host``), over https when the seed was https, and never to a host whose
  certificate failed verification (capture-anyway mode);
* **publishing** it: the settings of the crawl go into the warcinfo record of every WARC file,
  so into every WACZ, and into ``state/crawl.json``. There credential header values are
  replaced by :data:`REDACTED`, URL passwords (a Redis frontier's, a seed's userinfo) by
  ``***``.

Request records are the exception, by design: they hold the request *as sent*, credentials
included, and the warcinfo record says so (``request-records``). Publish the WARCs of an
authenticated crawl only after deciding about that.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from archiver.urls import InvalidURLError, normalize_host, scheme_host_port

REDACTED = "<redacted>"

#: Header names that carry credentials by definition (RFC 9110 section 11, RFC 6265).
_CREDENTIAL_NAMES = frozenset({"authorization", "proxy-authorization", "cookie"})
#: Custom headers that by their name carry a secret (``X-Api-Key``, ``X-Auth-Token``, …).
_CREDENTIAL_WORDS = re.compile(r"auth|token|secret|password|passwd|api-?key|session", re.I)


def is_credential_header(name: str) -> bool:
    """Whether a configured header's value is a secret (scoped when sent, redacted when shown)."""
    return name.lower() in _CREDENTIAL_NAMES or bool(_CREDENTIAL_WORDS.search(name))


def redact_headers(headers: Iterable[tuple[str, str]]) -> list[list[str]]:
    """``[name, value]`` pairs with the values of credential headers redacted."""
    return [[name, REDACTED if is_credential_header(name) else value] for name, value in headers]


def credential_scope(
    seeds: Iterable[str], extra_hosts: Iterable[str] = ()
) -> dict[str, frozenset[str]]:
    """Host -> the schemes over which credential headers may be sent to it.

    A seed's host gets its own scheme, plus https for an http seed (a site that upgrades its
    visitors keeps their login); ``extra_hosts`` get both. Hosts are compared as normalised URLs
    write them (lowercase, IDNA A-labels), so the seeds must be normalised.
    """
    scope: dict[str, set[str]] = {}
    for seed in seeds:
        if not seed.startswith(("http://", "https://")):
            continue
        scheme, host, _ = scheme_host_port(seed)  # as the fetcher splits every URL
        schemes = scope.setdefault(host.lower(), set())
        schemes.update(("http", "https") if scheme == "http" else ("https",))
    for host in extra_hosts:
        try:
            name = normalize_host(host.strip().rstrip("."))
        except InvalidURLError:
            continue  # not a host name: it can match no request
        scope.setdefault(name, set()).update(("http", "https"))
    return {host: frozenset(schemes) for host, schemes in scope.items()}


def may_send_credentials(scope: Mapping[str, frozenset[str]], scheme: str, host: str) -> bool:
    """Whether credential headers go with a request to ``scheme://host``."""
    return scheme in scope.get(host.lower(), ())


__all__ = [
    "REDACTED",
    "credential_scope",
    "is_credential_header",
    "may_send_credentials",
    "redact_headers",
]
