"""``python -m archiver``: the same as the ``archiver`` command."""

import sys

from archiver.commands.cli import main

sys.exit(main())
