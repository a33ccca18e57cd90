"""``python -m cpsat_rebalancer.cli``: the same as the ``cpsat-rebalancer`` command."""

import sys

from . import main

sys.exit(main())
