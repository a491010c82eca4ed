"""``python -m schedlab``: the same CLI as the ``schedlab`` command."""

from .cli import main

main()
