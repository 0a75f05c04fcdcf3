"""README's Python API example, run as written (its URL made local) in a Python of its own:
``from archiver import Settings, crawl`` (names the package imports when first used) crawls,
and what the example prints is what it says it prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.docs.shell import environment
from tests.support.site import SiteServer

README = Path(__file__).resolve().parents[2] / "README.md"
EXAMPLE = "https://example.org/"


def python_api_block() -> str:
    """The ``python`` block of README's "Python API" section."""
    section = README.read_text(encoding="utf-8").split("\n## Python API\n", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_readmes_python_api_example_crawls_as_it_says(tmp_path: Path) -> None:
    code = python_api_block()
    assert EXAMPLE in code
    site = SiteServer()
    site.add_page("/", '<html><body><a href="/about">about</a></body></html>')
    site.add_page("/about", "<html><body>about us</body></html>")
    with site.running_in_thread() as running:
        done = subprocess.run(
            [sys.executable, "-c", code.replace(EXAMPLE, running.url("/"))],
            cwd=tmp_path,
            env=environment(),
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        fetched = sorted(hit.path for hit in running.counters.hits)
    assert done.returncode == 0, done.stderr[-3000:]
    status, paths, figures = done.stdout.splitlines()
    assert status == "completed None"
    assert paths.endswith(" crawls/example/index.cdxj"), paths
    assert (tmp_path / "crawls" / "example" / "index.cdxj").is_file()
    assert list((tmp_path / "crawls" / "example" / "warcs").glob("*.warc.gz")), paths
    captures, by_class = figures.split(" ", 1)
    assert int(captures) >= 2 and "'2xx'" in by_class
    assert {"/", "/about"} <= set(fetched)
