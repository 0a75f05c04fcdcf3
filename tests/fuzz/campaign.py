"""``scripts/fuzz``: run fuzz targets under atheris, one after another, and report each.

    scripts/fuzz --seconds 600            # every target for 10 minutes
    scripts/fuzz --seconds 20 urls warc   # two targets

Each target runs in its own process (``python -m tests.fuzz.atheris_main``) on its working
corpus (``--work``, default ``.fuzz/TARGET/corpus``, kept between runs) and the checked-in seeds
(``tests/fuzz/corpus/TARGET``), with libFuzzer's per-input time and memory limits. One line per
target: ``TARGET: N execs, F features, C corpus, K crashes``; the exit status is 1 when any
target crashed, disagreed with its oracle, or broke a limit (the input is kept in
``.fuzz/TARGET/`` and the log says what happened).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from tests.fuzz.harness import NAMES, load

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "tests" / "fuzz" / "corpus"
#: libFuzzer's artifacts: an uncaught exception or a disagreement, a time-out, an out-of-memory
ARTIFACTS = ("crash-", "timeout-", "oom-", "leak-")
_STATS = re.compile(rb"#(\d+)\s+\S+\s+cov: (\d+) ft: (\d+) corp: (\d+)/")
_DONE = re.compile(rb"Done (\d+) runs in (\d+) second")


@dataclass(frozen=True)
class Result:
    name: str
    execs: int
    coverage: int
    features: int
    corpus: int
    crashes: list[Path]
    seconds: float
    log: Path

    def line(self) -> str:
        return (
            f"{self.name}: {self.execs} execs, {self.features} features, {self.corpus} corpus, "
            f"{len(self.crashes)} crashes"
        )


def run_target(
    name: str,
    *,
    seconds: int,
    work: Path,
    rss_limit_mb: int = 2048,
    timeout: int = 10,
    seed: int = 0,
    python: str = sys.executable,
) -> Result:
    """Fuzz one target for ``seconds`` and read libFuzzer's figures from its log."""
    target = load(name)
    base = work / name
    corpus = base / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    before = {p for p in base.iterdir() if p.name.startswith(ARTIFACTS)}
    seeds = SEEDS / name
    log = base / "log.txt"
    dictionary = base / "dictionary.txt"
    dictionary.write_text(
        "".join('"' + "".join(f"\\x{b:02x}" for b in token) + '"\n' for token in target.dictionary)
    )
    command = [
        python,
        "-m",
        "tests.fuzz.atheris_main",
        name,
        f"-max_total_time={seconds}",
        f"-max_len={target.max_len}",
        f"-rss_limit_mb={rss_limit_mb}",
        f"-malloc_limit_mb={rss_limit_mb}",
        f"-timeout={timeout}",
        f"-artifact_prefix={base}/",
        "-print_final_stats=1",
        *([f"-seed={seed}"] if seed else []),
        *([f"-dict={dictionary}"] if target.dictionary else []),
        str(corpus),
        *([str(seeds)] if seeds.is_dir() else []),
    ]
    started = time.monotonic()
    with open(log, "wb") as out:
        status = subprocess.run(
            command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False
        ).returncode
    elapsed = time.monotonic() - started
    text = log.read_bytes()
    stats = _STATS.findall(text)
    execs, cov, ft, corp = (int(x) for x in stats[-1]) if stats else (0, 0, 0, 0)
    done = _DONE.search(text)
    if done is not None:
        execs = int(done.group(1))
    crashes = sorted(p for p in base.iterdir() if p.name.startswith(ARTIFACTS) and p not in before)
    if not crashes and (status != 0 or not stats or b"Uncaught Python exception" in text):
        # a failure that left no input behind (the target never started, or died while
        # libFuzzer was stopping): the log says what happened
        crashes = [log]
    return Result(name, execs, cov, ft, corp, crashes, elapsed, log)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("targets", nargs="*", metavar="TARGET", help=f"of: {', '.join(NAMES)}")
    parser.add_argument("--seconds", type=int, default=60, help="per target (default 60)")
    parser.add_argument("--work", type=Path, default=ROOT / ".fuzz", help="corpora, logs, crashes")
    parser.add_argument("--rss-limit-mb", type=int, default=2048, help="memory per process")
    parser.add_argument("--timeout", type=int, default=10, help="seconds per input")
    parser.add_argument(
        "--seed", type=int, default=0, help="libFuzzer's seed (default 0: a new one each run)"
    )
    parser.add_argument("--list", action="store_true", help="list the targets and their oracles")
    args = parser.parse_args(argv)
    if args.list:
        for name in NAMES:
            print(f"{name}: {load(name).summary}")
        return 0
    unknown = [t for t in args.targets if t not in NAMES]
    if unknown:
        parser.error(f"unknown target(s) {', '.join(unknown)}; known: {', '.join(NAMES)}")
    failed = False
    for name in args.targets or NAMES:
        result = run_target(
            name,
            seconds=args.seconds,
            work=args.work.resolve(),
            rss_limit_mb=args.rss_limit_mb,
            timeout=args.timeout,
            seed=args.seed,
        )
        print(result.line(), flush=True)
        for crash in result.crashes:
            failed = True
            print(f"  {crash} (log: {result.log})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
