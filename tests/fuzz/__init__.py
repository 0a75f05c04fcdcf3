"""Coverage-guided fuzzing of every parser that reads the network or a WARC file.

Each module of :mod:`tests.fuzz.targets` is one target: a ``check(data)`` function that feeds
``data`` to one parser and judges the result against an oracle (an independent parser where
one exists, else properties every input must keep). ``scripts/fuzz`` runs them under atheris
(libFuzzer); ``tests/fuzz/test_fuzz.py`` replays the checked-in corpus through every ``check``
and runs each target briefly, so a regression fails the suite. docs/fuzzing.md has the figures.
"""
