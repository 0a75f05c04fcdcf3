"""A deterministic synthetic web site for crawl benchmarks (standard library only).

``generate(out, pages=5000, seed=1)`` writes::

    out/root/index.html          the crawl starts at "/"; links to the first pages and small.html
    out/root/small.html          a tiny page
    out/root/p/DDD/NNNNN.html    content pages, 100 per directory, 10-52 KB of text each
    out/root/css/*.css           stylesheets (one only reachable through @import) with url() images
    out/root/img/*.png           small PNGs: <img src>, <img srcset>-only, <picture><source
                                 srcset>-only and CSS url()-only pools
    out/manifest.json            what was generated (counts, sizes, redirects, broken links)
    out/urls.txt                 every served file as a URL path (the bare client's list)

Every page is reachable through ``<a href>`` (page *i* links to pages 2i+1 and 2i+2, so the link
depth is about log2(N)) and carries 10-30 links in all: relative, root-relative, some with a
``#fragment``, a few through ``/old/...`` (the nginx config answers those with a 301 to ``/p/...``)
and one in 200 pages links to a missing page (404). Same ``seed`` and ``pages`` give
byte-identical output. The shape follows the independent harness in ``../shared/bench`` (same
kinds of resources and link mix) so figures stay comparable; the code is our own.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import random
import shutil
import struct
import zlib
from pathlib import Path
from typing import Any

VERSION = 1  #: bump when the output changes, so cached sites are regenerated

_VOCABULARY = [
    "archive",
    "capture",
    "crawler",
    "frontier",
    "record",
    "replay",
    "warc",
    "index",
    "digest",
    "payload",
    "header",
    "block",
    "request",
    "response",
    "redirect",
    "status",
    "offset",
    "segment",
    "revisit",
    "snapshot",
    "mirror",
    "collection",
    "stylesheet",
    "image",
    "anchor",
    "fragment",
    "query",
    "scheme",
    "host",
    "port",
    "domain",
    "path",
    "canonical",
    "robots",
    "sitemap",
    "queue",
    "worker",
    "session",
    "socket",
    "stream",
    "buffer",
    "chunk",
    "gzip",
    "encoding",
    "latency",
    "throughput",
    "memory",
    "loop",
    "task",
    "future",
    "policy",
    "scope",
    "depth",
    "budget",
    "trap",
    "calendar",
    "seed",
    "harvest",
    "preserve",
]


def _png(rng: random.Random, width: int, height: int) -> bytes:
    """A valid RGB PNG of random (incompressible) pixels, stored without compression."""
    rows = b"".join(b"\x00" + rng.randbytes(width * 3) for _ in range(height))

    def chunk(tag: bytes, data: bytes) -> bytes:
        crc = zlib.crc32(tag + data) & 0xFFFFFFFF
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 0))
        + chunk(b"IEND", b"")
    )


def page_path(i: int) -> str:
    return f"/p/{i // 100:03d}/{i:05d}.html"


def _relative(src: str, dst: str) -> str:
    """The relative reference from the page at ``src`` to ``dst`` (both root-relative)."""
    return posixpath.relpath(dst, posixpath.dirname(src))


class _Writer:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.served: list[str] = []
        self.total = 0

    def __call__(self, path: str, data: bytes | str) -> int:
        raw = data.encode() if isinstance(data, str) else data
        full = self.root / path.lstrip("/")
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_bytes(raw)
        self.served.append(path)
        self.total += len(raw)
        return len(raw)


def generate(out: Path, *, pages: int = 5000, seed: int = 1) -> dict[str, Any]:
    """Write the site under ``out`` (replacing it) and return the manifest."""
    if pages < 3:
        raise ValueError("at least 3 pages")
    out = Path(out)
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    rng = random.Random(seed)
    write = _Writer(tmp / "root")

    # -- images: four pools told apart by how pages and stylesheets reference them
    img_src = [f"/img/i-{k:04d}.png" for k in range(300)]
    img_srcset = [f"/img/s-{k:04d}.png" for k in range(50)]  # only in <img srcset>
    img_source = [f"/img/s-{k:04d}.png" for k in range(50, 100)]  # only in <source srcset>
    img_css = [f"/img/c-{k:04d}.png" for k in range(100)]  # only in CSS url()
    for path in img_src + img_srcset + img_source + img_css:
        write(path, _png(rng, rng.randint(16, 64), rng.randint(16, 96)))

    # -- stylesheets: base.css is reached only through @import
    sheets = [f"/css/style-{k:02d}.css" for k in range(20)]
    css_refs = [img_css[k::20] for k in range(20)]  # every CSS-only image used exactly once
    write(
        "/css/base.css",
        "body{margin:0;font:16px/1.5 serif}\n.b{background:url(../img/c-0000.png)}\n",
    )
    for k, sheet in enumerate(sheets):
        parts = ['@import url("base.css");\n'] if k % 3 == 0 else []
        for j, img in enumerate(css_refs[k]):
            parts.append(f".c{k}x{j}{{background-image:url(../img/{posixpath.basename(img)})}}\n")
        parts.extend(
            f".r{j}{{color:#{rng.randrange(1 << 24):06x}}}\n" for j in range(rng.randint(50, 400))
        )
        write(sheet, "".join(parts))

    # -- pages
    paragraphs = [
        " ".join(rng.choice(_VOCABULARY) for _ in range(rng.randint(40, 160))) for _ in range(500)
    ]
    paths = [page_path(i) for i in range(pages)]
    redirects: set[str] = set()
    broken: list[str] = []
    sizes: list[int] = []
    used = {"src": set(), "srcset": set(), "source": set()}  # type: dict[str, set[str]]
    for i, path in enumerate(paths):
        targets = [paths[c] for c in (2 * i + 1, 2 * i + 2) if c < pages]
        want = rng.randint(10, 30)
        while len(targets) < want:
            targets.append(paths[rng.randrange(pages)])
        hrefs = []
        for j, dst in enumerate(targets):
            roll = rng.random()
            if j >= 2 and roll < 0.004:
                old = "/old/" + dst.removeprefix("/p/")
                redirects.add(old)
                hrefs.append(old)
            elif roll < 0.45:
                hrefs.append(_relative(path, dst))
            elif roll < 0.55:
                hrefs.append(f"{_relative(path, dst)}#s{rng.randint(1, 5)}")
            else:
                hrefs.append(dst)
        if i % 200 == 7:
            missing = f"/p/missing-{i:05d}.html"
            broken.append(missing)
            hrefs.append(missing)
        images = rng.sample(img_src, rng.randint(1, 3))
        used["src"].update(images)
        head = [
            f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Page {i}</title>\n'
        ]
        head.extend(
            f'<link rel="stylesheet" href="{_relative(path, css)}">\n'
            for css in rng.sample(sheets, rng.randint(1, 2))
        )
        previous = paths[i - 1] if i else "/"
        head.append(
            f'</head><body>\n<nav><a href="/">home</a> <a href="{previous}">prev</a></nav>\n'
        )
        head.append(f'<h1 id="s1">Page {i}</h1>\n')
        head.extend(
            f'<img src="{_relative(path, img)}" alt="" width="32" height="32">\n' for img in images
        )
        if i % 2 == 0:
            # cycle through the pools so that even a small site references every image in them
            if i % 4 == 0:
                a = img_srcset[(i // 4) % len(img_srcset)]
                b = img_srcset[(i // 4 + 1) % len(img_srcset)]
                used["srcset"].update((a, b))
                head.append(
                    f'<img src="{_relative(path, images[0])}" srcset="{_relative(path, a)} 1x, {b} 2x" alt="">\n'
                )
            else:
                a = img_source[(i // 4) % len(img_source)]
                b = img_source[(i // 4 + 1) % len(img_source)]
                used["source"].update((a, b))
                head.append(
                    f'<picture><source srcset="{a} 480w, {_relative(path, b)} 960w" sizes="50vw">'
                    f'<img src="{_relative(path, images[0])}" alt=""></picture>\n'
                )
        body = []
        size = sum(len(part) for part in head)
        target = rng.randint(10 * 1024, 52 * 1024)
        next_link = 0
        section = 2
        while size < target:
            words = rng.choice(paragraphs).split(" ")
            for _ in range(rng.randint(1, 3)):
                if next_link >= len(hrefs):
                    break
                pos = rng.randrange(len(words))
                words[pos] = f'<a href="{hrefs[next_link]}">{words[pos]}</a>'
                next_link += 1
            if rng.random() < 0.1:
                body.append(f'<h2 id="s{section}">Section {section}</h2>\n')
                section += 1
            body.append(f'<p class="r{rng.randint(0, 49)}">{" ".join(words)}</p>\n')
            size += len(body[-1])
        if next_link < len(hrefs):
            body.append(
                "<ul>"
                + "".join(f'<li><a href="{h}">more</a></li>' for h in hrefs[next_link:])
                + "</ul>\n"
            )
        body.append(f"<footer>synthetic page {i}</footer></body></html>\n")
        sizes.append(write(path, "".join(head + body)))

    index = [
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Synthetic site</title>'
        '<link rel="stylesheet" href="css/style-00.css"></head><body><ul>\n'
    ]
    index.extend(
        f'<li><a href="{paths[i].lstrip("/")}">page {i}</a></li>\n' for i in range(min(pages, 30))
    )
    index.append('<li><a href="small.html">small</a></li></ul></body></html>\n')
    write("/index.html", "".join(index))
    write(
        "/small.html",
        "<!DOCTYPE html>\n<html><head><title>small</title></head><body><p>small</p>"
        '<a href="/">home</a></body></html>\n',
    )

    mean = sum(sizes) / len(sizes)
    manifest: dict[str, Any] = {
        "version": VERSION,
        "pages": pages,
        "seed": seed,
        "files": len(write.served),
        "total_bytes": write.total,
        "html_files": pages + 2,
        "page_bytes_mean": round(mean),
        "page_bytes_min": min(sizes),
        "page_bytes_max": max(sizes),
        "avg_page": paths[min(range(pages), key=lambda k: abs(sizes[k] - mean))],
        "css": ["/css/base.css", *sheets],
        "img_src_used": len(used["src"]),
        "img_srcset_only": len(used["srcset"]),
        "img_source_srcset_only": len(used["source"]),
        "img_css_only": len(img_css),
        "redirect_links": sorted(redirects),
        "broken_links": broken,
    }
    (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1))
    (tmp / "urls.txt").write_text("".join(p + "\n" for p in sorted(write.served)))
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    return manifest


def ensure(out: Path, *, pages: int, seed: int = 1) -> dict[str, Any]:
    """The site at ``out``, generated only when missing or made by another version/size."""
    manifest_file = Path(out) / "manifest.json"
    try:
        manifest = json.loads(manifest_file.read_text())
        if (manifest.get("version"), manifest.get("pages"), manifest.get("seed")) == (
            VERSION,
            pages,
            seed,
        ):
            return dict(manifest)
    except (OSError, ValueError):
        pass
    return generate(Path(out), pages=pages, seed=seed)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path)
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    m = generate(args.out, pages=args.pages, seed=args.seed)
    print(
        f"{m['files']} files, {int(m['total_bytes']) / 1e6:.1f} MB, mean page {m['page_bytes_mean']} B"
    )


if __name__ == "__main__":
    main()
