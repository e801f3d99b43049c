"""The ``hsa`` command line: thin commands over the library, one module per command group."""

from hsa.cli.main import app, main

__all__ = ["app", "main"]
