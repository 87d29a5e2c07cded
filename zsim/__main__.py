"""``python -m zsim`` is the ``zsim`` command."""

from .cli import entry

entry()
