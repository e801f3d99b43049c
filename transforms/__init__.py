"""The built-in transform families. Importing this package registers every one of them.

One module per family; each module's docstring says what its transforms change and what they
promise to keep. Every module in this package is imported (in name order), so a new family is a
new file and nothing else. Shipped recipes live in ``transforms/recipes/`` and can be named
without a path.
"""

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
    importlib.import_module(f"{__name__}.{_module}")
