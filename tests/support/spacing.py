"""Judging, at a test server, how a crawler spaced the requests it sent to one host.

The crawler's gate spaces the starts it schedules; the server sees each start late by that
request's own latency (connection, scheduling on an event loop the server may share with the
crawler, a loaded CPU). A request seen late narrows the gap before the next one by as much as it
widens the gap after it, so the gaps of a run add up to the scheduled spacing whatever the
latencies: the mean gap is what a loaded machine cannot blur, while the narrowest gap shows only
that no two requests went out together.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

#: How much later than the one before it the server may see a request start, beyond its share
#: of the spacing (seen up to a quarter of a second on a 2-core machine with a load over 10).
LATENCY = 0.3


def assert_spaced(starts: Iterable[float], delay: float) -> None:
    """The starts (seconds, any order) were spaced by at least ``delay`` at the sender."""
    times = sorted(starts)
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert gaps, "fewer than two requests: nothing to judge"
    mean = (times[-1] - times[0]) / len(gaps)
    assert mean >= delay - LATENCY / len(gaps), f"spaced {mean:.3f} s on average, not {delay} s"
    assert min(gaps) >= delay / 4, f"two requests {min(gaps):.3f} s apart: sent together"
