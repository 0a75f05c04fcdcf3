"""archiver's version, in a leaf every layer may import (the package's ``__init__`` imports the
crawler for the Python API, so importing ``archiver`` itself from below would import everything)."""

__version__ = "0.1.0"
