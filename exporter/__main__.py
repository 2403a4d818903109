"""`python -m exporter`: the same as the `gpu-exporter` console script."""

import sys

from exporter.cli import main

sys.exit(main())
