"""The built-in transform families. Importing this package registers every one of them.

One module per family; each module's docstring says what its transforms change and what they
promise to keep. Shipped recipes live in ``transforms/recipes/`` and can be named without a path.
"""

from transforms import identity, tool_schema  # noqa: F401 - imported to register
