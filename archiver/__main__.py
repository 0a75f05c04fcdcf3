"""``python -m archiver``: the same as the ``archiver`` command."""

import sys

from archiver.cli import main

sys.exit(main())
