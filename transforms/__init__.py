"""The built-in transform families. Importing this package registers every one of them.

One module per family, or a package when a family reads better in several modules (its
``__init__`` imports them); each family's docstring says what its transforms change and what they
promise to keep. Every module and package in this package is imported (in name order), so a new
family is a new file or folder and nothing else. Shipped recipes live in ``transforms/recipes/``
and can be named without a path.
"""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    importlib.import_module(f"{__name__}.{_module}")
