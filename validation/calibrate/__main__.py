"""``python -m validation.calibrate``: see ``validation.calibrate.cli.main``."""

import sys

from .cli import main

if __name__ == "__main__":  # not in a spawn child, which imports this module as __mp_main__
    sys.exit(main())
