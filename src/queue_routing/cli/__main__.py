"""``python -m queue_routing.cli``: the ``queue-routing`` command."""

import sys

from . import main

sys.exit(main())
