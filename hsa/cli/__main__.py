"""``python -m hsa.cli``: the same as the ``hsa`` command."""

import sys

from hsa.cli.main import main

sys.exit(main())
