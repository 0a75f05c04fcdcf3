"""archiver's version, in a leaf every layer may import (the package's ``__init__`` offers the
crawler's Python API, which a module below the crawler must not reach for)."""

__version__ = "0.1.0"
