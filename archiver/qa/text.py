"""How alike two renderings of a page read: the text similarity of a replay check.

The score is the normalised Indel similarity of the two texts (1 - distance / total length,
``rapidfuzz.fuzz.ratio`` / 100) after runs of white space are made single spaces, so that layout
differences that do not change what a reader reads (a line break, an indentation) cost nothing.
Browsertrix Crawler's QA mode scores text the same way (a Levenshtein ratio of the page texts).
rapidfuzz computes it in C++ in time proportional to the texts' product divided by the machine
word (Hyyrö's bit-parallel algorithm), so two 64 KiB texts take milliseconds. Only this module
imports rapidfuzz.
"""

from __future__ import annotations

import re

from rapidfuzz import fuzz

_SPACES = re.compile(r"\s+")


def normal_text(text: str) -> str:
    """``text`` with each run of white space made one space, and trimmed."""
    return _SPACES.sub(" ", text).strip()


def text_similarity(replayed: str, reference: str) -> float:
    """From 0 (nothing in common) to 1 (the same words in the same order); two empty texts are
    the same."""
    a, b = normal_text(replayed), normal_text(reference)
    if not a and not b:
        return 1.0
    return round(float(fuzz.ratio(a, b)) / 100.0, 4)


__all__ = ["normal_text", "text_similarity"]
