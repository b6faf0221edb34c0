"""``python -m privopt`` runs the command line."""

import sys

from privopt.cli import main

sys.exit(main())
