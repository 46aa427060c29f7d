"""pilar: a page-grounded evidence platform for document question answering.

>>> from pilar import Pilar
>>> p = Pilar(home="/tmp/pilar-demo")      # doctest: +SKIP
>>> p.ingest(["examples/"])                 # doctest: +SKIP
>>> p.search("who won in 1999?").packet.text  # doctest: +SKIP
"""

from pilar.pipeline import Pilar

__all__ = ["Pilar"]
__version__ = "0.1.0"
