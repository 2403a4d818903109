import sys

from reclaimer.cli import main

sys.exit(main())
