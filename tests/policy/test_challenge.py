"""archiver.policy.challenge: bot challenges told apart from ordinary refusals, and what a
challenge means for its host."""

from __future__ import annotations

from typing import Any

import pytest

from archiver.models import FailReason, Outcome, TaskResult
from archiver.policy import challenge


def _lookup(headers: dict[str, str]) -> Any:
    table = {k.lower(): v for k, v in headers.items()}
    return lambda name: table.get(name.lower())


CF_BODY = (
    b'<title>Just a moment...</title><script src="/cdn-cgi/challenge-platform/h/g/x"></script>'
)


@pytest.mark.parametrize(
    ("status", "headers", "body", "provider"),
    [
        (403, {"CF-Mitigated": "challenge"}, b"", "cloudflare"),
        (200, {"cf-mitigated": " Challenge "}, None, "cloudflare"),
        (503, {"Server": "cloudflare"}, CF_BODY, "cloudflare"),
        (202, {"x-amzn-waf-action": "challenge"}, b"", "aws-waf"),
        (405, {"x-amzn-waf-action": "captcha"}, b"", "aws-waf"),
        (429, {"x-vercel-mitigated": "challenge"}, b"", "vercel"),
        (
            403,
            {"X-DataDome": "protected"},
            b"<script src='https://ct.captcha-delivery.com/c.js'>",
            "datadome",
        ),
        # ordinary responses, even from the same providers, are not challenges
        (200, {"Server": "cloudflare"}, CF_BODY, None),  # a page that talks about the platform
        (403, {"Server": "cloudflare"}, b"<h1>Forbidden</h1>", None),
        (403, {"Server": "nginx"}, CF_BODY, None),
        (200, {"cf-mitigated": "block"}, b"", None),
        (200, {"Content-Security-Policy": "script-src https://cdnjs.cloudflare.com/"}, b"", None),
        (200, {"X-DataDome": "protected"}, b"captcha-delivery.com", None),
        (403, {"X-DataDome": "protected"}, b"<h1>Forbidden</h1>", None),
        (404, {}, None, None),
    ],
)
def test_challenge_detection(
    status: int, headers: dict[str, str], body: bytes | None, provider: str | None
) -> None:
    assert challenge.detect(status, _lookup(headers), body) == provider


def test_a_challenge_pauses_its_host_like_a_429() -> None:
    challenged = TaskResult(Outcome.RETRY, status=403, reason=FailReason.CHALLENGE.value)
    assert challenged.host_pause == 30.0
    assert TaskResult(Outcome.RETRY, status=202, reason="challenge", retry_after=4).host_pause == 4
    assert TaskResult(Outcome.RETRY, status=429, retry_after=2.5).host_pause == 2.5
    assert TaskResult(Outcome.DONE, status=403).host_pause is None
    assert TaskResult(Outcome.RETRY, status=500, reason="server-error").host_pause is None
