"""``python -m rxcord``: the same command line as the ``rxcord`` script."""

import sys

from rxcord.cli.main import main

sys.exit(main())
