"""``python -m quineling``: the same command as the ``quineling`` console script."""

import sys

from quineling.cli import main

sys.exit(main())
