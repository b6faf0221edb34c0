"""``python -m privopt`` runs the command line."""

import sys

from privopt._launch import main

sys.exit(main())
