"""``python -m hrx.bench``: the same as ``hrx-bench``."""
import sys

from .cli import main

sys.exit(main())
