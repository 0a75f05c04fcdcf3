"""One target under atheris (libFuzzer): ``python -m tests.fuzz.atheris_main TARGET [libFuzzer
options and corpus directories]``. ``scripts/fuzz`` starts it once per target.

The target is imported under atheris' instrumentation limited to archiver (and a third-party
parser archiver hands its input to, where one does the parsing), so libFuzzer's coverage
(``cov``, ``ft``) is archiver's code being explored, not the oracles'.
"""

from __future__ import annotations

import importlib
import sys

import atheris

from tests.fuzz.harness import NAMES, instrumented


def main(argv: list[str]) -> None:
    name = argv[1]
    if name not in NAMES:
        raise SystemExit(f"unknown fuzz target {name!r}; known: {', '.join(NAMES)}")
    if any(m == "archiver" or m.startswith("archiver.") for m in sys.modules):
        raise SystemExit("archiver was imported before instrumentation")
    with atheris.instrument_imports(include=list(instrumented(name))):
        module = importlib.import_module(f"tests.fuzz.targets.{name}")
    atheris.Setup([argv[0], *argv[2:]], module.TARGET.check)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
