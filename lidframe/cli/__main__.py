"""``python -m lidframe.cli``: the same as the ``lidframe`` command."""

import sys

from lidframe.cli.main import main

sys.exit(main())
