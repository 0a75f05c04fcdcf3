"""The figures of a crawl run as people read them."""

from __future__ import annotations


def human_bytes(count: float) -> str:
    """``1.2 MB`` (SI units, as the sizes on the command line)."""
    if count < 1000:
        return f"{int(count)} B"
    for unit in ("KB", "MB", "GB", "TB"):
        count /= 1000
        if count < 1000 or unit == "TB":
            return f"{count:.1f} {unit}"
    return f"{count:.1f} TB"  # pragma: no cover - the loop returns


__all__ = ["human_bytes"]
