"""``srcset`` parsing (:func:`~archiver.extract.links.srcset_urls`).

Oracle, on every input: the HTML Standard's "parse a srcset attribute" algorithm
(https://html.spec.whatwg.org/multipage/images.html#parse-a-srcset-attribute), transcribed
step by step in :func:`spec_urls`, up to where it splits candidates; descriptors are not
validated (a candidate with invalid descriptors is still fetched, as the function says). The
URLs and their order must be the same.
"""

from __future__ import annotations

from archiver.extract.links import srcset_urls
from tests.fuzz.harness import Target, agree

_WHITESPACE = " \t\n\r\f"


def spec_urls(value: str) -> list[str]:
    urls: list[str] = []
    position, end = 0, len(value)
    while True:
        # 1. splitting loop: skip ASCII whitespace and commas
        while position < end and value[position] in _WHITESPACE + ",":
            position += 1
        if position >= end:
            return urls
        # 2. the URL: a run of non-whitespace
        start = position
        while position < end and value[position] not in _WHITESPACE:
            position += 1
        url = value[start:position]
        if url.endswith(","):
            url = url.rstrip(",")  # no descriptors
        else:
            # 3. the descriptor tokenizer, to the comma that ends the candidate
            while position < end and value[position] in _WHITESPACE:
                position += 1
            state = "in descriptor"
            while position < end:
                char = value[position]
                if state == "in descriptor":
                    if char in _WHITESPACE:
                        state = "after descriptor"
                    elif char == ",":
                        position += 1
                        break
                    elif char == "(":
                        state = "in parens"
                elif state == "in parens":
                    if char == ")":
                        state = "in descriptor"
                elif char not in _WHITESPACE:  # after descriptor: reconsume in descriptor
                    state = "in descriptor"
                    continue
                position += 1
        if url:
            urls.append(url)


def check(data: bytes) -> None:
    value = data.decode("utf-8", "replace")
    ours = list(srcset_urls(value))
    agree(ours == spec_urls(value), "srcset candidates differ", ours, spec_urls(value))


TARGET = Target(
    name="srcset",
    check=check,
    max_len=2048,
    summary="srcset_urls; oracle: the HTML Standard's srcset parsing algorithm, transcribed",
    dictionary=(b" 1x", b" 2x", b" 100w", b",", b"(", b")", b"a.png", b"\t", b"\x0c"),
)
