"""Proving that every page replays: each page of a crawl replayed from the archive in Chromium,
every request the archive could not answer named.

Modules: :mod:`.archive` (a request in, the capture a replay tool serves out, as pywb looks it
up), :mod:`.fuzzy` (pywb's fuzzy matching), :mod:`.check` (one page replayed: misses, fuzzy
answers, errors), :mod:`.text` and :mod:`.image` (similarity scores; rapidfuzz, Pillow and
pixelmatch stay behind them), :mod:`.live` (the live page, for comparison), :mod:`.replayers`
and :mod:`.tools` (archiver itself, pywb or ReplayWeb.page as the replayer), :mod:`.options`,
:mod:`.run` (a check run over a crawl directory: ``qa.jsonl``, the summary's totals).
"""
