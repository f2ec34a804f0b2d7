"""`python -m search_engine ...`: see search_engine/cli.py."""

import sys

from search_engine.cli import main

if __name__ == "__main__":
    sys.exit(main())
