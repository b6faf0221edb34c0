"""The ``privopt`` console script: SIGINT and SIGTERM end it cleanly from its first instant.

Importing the command line (numpy, the compiled core, each mechanism's options) takes a moment,
longer on a busy machine; a Ctrl-C meanwhile would print the traceback of whatever import it
interrupted, and a SIGTERM would end the process without a word. Here both end the command
with its one line and exit code 130 / 143 until :func:`privopt.cli.main` installs its own
handlers (nothing has been written before then).
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

__all__ = ["main"]


def _before_the_run(signum: int, frame: Any) -> None:
    what = "interrupted (SIGINT)" if signum == signal.SIGINT else "terminated (SIGTERM)"
    os.write(2, f"privopt: error: {what}; no output written, any earlier output kept\n".encode())
    os._exit(128 + signum)


def main() -> int:
    """Run the ``privopt`` command line (:func:`privopt.cli.main`) as this process's command."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(sig) != signal.SIG_IGN:  # a background job keeps ignoring SIGINT
            signal.signal(sig, _before_the_run)
    from privopt.cli import main as run

    return run()


if __name__ == "__main__":
    sys.exit(main())
