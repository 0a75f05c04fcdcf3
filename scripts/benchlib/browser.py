"""Browser-driven capture: a client-rendered synthetic site crawled static, ``--browser all`` and
``--browser auto``, each measured as a whole process (Chromium's processes included: they are
archiver's descendants, so their CPU reaches ``wait4``).

The site (generated once per size under bench-out/sites/spa-N, served by nginx) is what a
single-page application looks like to a crawler: every page is an empty ``<div id="root">``
plus one shared script and stylesheet; the script fetches the page's JSON (title, text, links
to five other pages, an image) and renders it. A static crawl sees the home page and its
script; a browser crawl reaches every page. Figures: pages (documents captured), URLs (every
capture), pages/s, CPU seconds per page, peak RSS of the process tree, and how many of the
browser's requests were answered from records (the shared script, style, font and images).

``auto`` and ``all`` run the default behaviours (``consent,autoscroll,autoplay``); beside them,
in the same run, ``all`` with ``autoscroll`` alone (the default before the other behaviours
existed) and with every behaviour (``autoclick`` and ``search`` too), so that what the
behaviours cost is measured against the same site, machine and load.
"""

from __future__ import annotations

import json
import random
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchlib import WORK, environment, peers
from benchlib.nginx import Nginx, Site
from benchlib.sitegen import _png

LINKS_PER_PAGE = 5
IMAGES = 20

SHELL = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>loading</title>
<link rel="stylesheet" href="/static/app.css">
<script src="/static/app.js" defer></script></head>
<body><noscript>This site needs JavaScript.</noscript><div id="root"></div></body></html>
"""

APP_JS = """(async () => {
  const id = location.pathname === "/" ? 0 : Number(location.pathname.split("/").pop().split(".")[0]);
  const data = await (await fetch("/data/" + id + ".json")).json();
  document.title = data.title;
  const root = document.getElementById("root");
  const h1 = document.createElement("h1");
  h1.textContent = data.title;
  const p = document.createElement("p");
  p.textContent = data.text;
  root.append(h1, p);
  const img = document.createElement("img");
  img.src = data.image;
  img.width = 120;
  root.append(img);
  const list = document.createElement("ul");
  for (const link of data.links) {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = link.href;
    a.textContent = link.title;
    li.append(a);
    list.append(li);
  }
  root.append(list);
})();
"""

APP_CSS = """@font-face { font-family: "Bench Sans"; src: url("/static/bench-sans.woff2"); }
body { font-family: "Bench Sans", sans-serif; margin: 2em; }
"""


def generate(out: Path, pages: int, seed: int = 7) -> None:
    """The client-rendered site: ``/`` and ``/p/N.html`` shells, ``/data/N.json``."""
    if (out / ".complete").exists():
        return
    shutil.rmtree(out, ignore_errors=True)
    rng = random.Random(seed)
    (out / "p").mkdir(parents=True)
    (out / "data").mkdir()
    (out / "static").mkdir()
    (out / "img").mkdir()
    (out / "index.html").write_text(SHELL)
    (out / "static" / "app.js").write_text(APP_JS)
    (out / "static" / "app.css").write_text(APP_CSS)
    (out / "static" / "bench-sans.woff2").write_bytes(
        b"wOF2" + bytes(rng.randrange(256) for _ in range(2000))
    )
    for n in range(IMAGES):
        (out / "img" / f"{n}.png").write_bytes(_png(rng, 120, 80))
    words = [
        "archive",
        "crawl",
        "record",
        "replay",
        "capture",
        "index",
        "page",
        "script",
        "render",
        "browser",
    ]
    for n in range(pages):
        if n:
            (out / "p" / f"{n}.html").write_text(SHELL)
        # page n links to the next pages, so everything is reachable from the home page
        targets = [(n * LINKS_PER_PAGE + k) % pages for k in range(1, LINKS_PER_PAGE + 1)]
        data = {
            "title": f"Page {n}",
            "text": " ".join(rng.choice(words) for _ in range(200)),
            "image": f"/img/{n % IMAGES}.png",
            "links": [
                {"href": f"/p/{t}.html" if t else "/", "title": f"Page {t}"} for t in targets
            ],
        }
        (out / "data" / f"{n}.json").write_text(json.dumps(data))
    (out / ".complete").write_text("")


MODES = ("static", "auto", "all", "all-autoscroll", "all-every")
#: The arguments of each mode beyond the common ones.
MODE_ARGS = {
    "static": [],
    "auto": ["--browser", "auto"],
    "all": ["--browser", "all"],
    "all-autoscroll": ["--browser", "all", "--behaviors", "autoscroll"],
    "all-every": [
        "--browser",
        "all",
        "--behaviors",
        "consent,autoscroll,autoclick,autoplay,search",
    ],
}
#: How each mode is named in the report.
MODE_NAMES = {
    "static": "static (`--browser off`)",
    "auto": "`--browser auto` (default behaviours)",
    "all": "`--browser all` (default behaviours)",
    "all-autoscroll": "`--browser all --behaviors autoscroll` (the former default)",
    "all-every": "`--browser all`, every behaviour",
}


def run(
    *, pages: int, rounds: int, tabs: int, keep: bool, out: Callable[[str], None] = print
) -> dict[str, Any]:
    site_dir = WORK / "sites" / f"spa-{pages}"
    generate(site_dir, pages)
    work = WORK / "runs" / "browser"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    workers = tabs * 2
    out(
        f"== browser: a client-rendered site of {pages} pages; archiver static, --browser auto and "
        f"--browser all, all with autoscroll alone and with every behaviour ({tabs} tabs, "
        f"{workers} workers, politeness off); {rounds} round(s)"
    )
    results: dict[str, list[dict[str, Any]]] = {mode: [] for mode in MODES}
    with Nginx(work / "nginx", [Site("spa", site_dir)]) as nginx:
        seed = nginx.base("spa") + "/"
        for round_no in range(1, rounds + 1):
            for mode in MODES:
                rundir = work / f"{mode}-{round_no}"
                extra = MODE_ARGS[mode] + (
                    [] if mode == "static" else ["--browser-tabs", str(tabs)]
                )
                row = peers.run_archiver(
                    seed, rundir, workers=workers, frontier_args=["--frontier", "sqlite"],
                    extra_args=extra, timeout=3600,
                )  # fmt: skip
                summary = json.loads((rundir / "crawl" / "summary.json").read_text())
                browser = summary.get("browser", {})
                result = {
                    **row.as_dict(),
                    "pages": summary.get("pages", 0),
                    "browser": browser,
                }
                results[mode].append(result)
                out(
                    f"   round {round_no} {mode:>14}: {result['pages']} pages, {row.urls} URLs, "
                    f"{row.m.wall_s:.1f} s wall, {row.m.cpu_s:.1f} s CPU, "
                    f"{row.m.peak_rss_kb / 1024:.0f} MB peak RSS"
                )
                if not keep:
                    shutil.rmtree(rundir / "crawl", ignore_errors=True)
    return {
        "kind": "browser",
        "when": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "machine": environment.machine(),
        "pages": pages,
        "rounds": rounds,
        "tabs": tabs,
        "workers": workers,
        "results": results,
    }


def _med(rows: list[dict[str, Any]], key: Callable[[dict[str, Any]], float]) -> float:
    return statistics.median(key(row) for row in rows) if rows else 0.0


def format_report(r: dict[str, Any]) -> str:
    lines = environment.machine_lines(r["machine"])
    lines.append(
        f"{r['when']}; client-rendered site of {r['pages']} pages; {r['rounds']} round(s), medians; "
        f"--browser-tabs {r['tabs']}, --workers {r['workers']}, politeness off, SQLite frontier; "
        "CPU and RSS include Chromium's processes"
    )
    lines.append("")
    lines.append(
        "| mode | pages | URLs | wall s | pages/s | CPU s | CPU s/page | peak RSS MB "
        "| browser requests | from records |"
    )
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for mode in MODES:
        rows = r["results"].get(mode, [])
        if not rows:
            continue
        pages = _med(rows, lambda x: x["pages"])
        wall = _med(rows, lambda x: x["wall_s"])
        cpu = _med(rows, lambda x: x["cpu_s"])
        lines.append(
            f"| {MODE_NAMES[mode]} | {pages:.0f} | {_med(rows, lambda x: x['urls']):.0f} | {wall:.1f} "
            f"| {pages / wall if wall else 0:.2f} | {cpu:.1f} | {cpu / pages if pages else 0:.3f} "
            f"| {_med(rows, lambda x: x['peak_rss_kb']) / 1024:.0f} "
            f"| {_med(rows, lambda x: x['browser'].get('requests', 0)):.0f} "
            f"| {_med(rows, lambda x: x['browser'].get('from_records', 0)):.0f} |"
        )
    return "\n".join(lines)
