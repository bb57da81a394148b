"""coursedata: the small data the course ships and the loaders for larger corpora.

    load_fruit(), dict_en2fr()       notebook 01's apple / banana / lemon and the query orange
    MarkovSource, default_corpus()   a synthetic corpus whose best possible loss is known
    load_tinyshakespeare()           tiny Shakespeare, found locally or downloaded once
    tiny_shakespeare_path()          where that local copy is, if there is one
    import_definitions()             reuse your classes from an earlier notebook
    import_earlier()                 the same for several notebooks, never raising

It imports only the standard library and NumPy, so a sandboxed notebook can always use it.
"""

from .earlier import import_earlier
from .fruit import FruitData, dict_en2fr, load_fruit
from .notebooks import import_definitions
from .shakespeare import load_tinyshakespeare, tiny_shakespeare_path
from .synthetic import MarkovSource, default_corpus

__all__ = [
    "FruitData",
    "MarkovSource",
    "default_corpus",
    "dict_en2fr",
    "import_definitions",
    "import_earlier",
    "load_fruit",
    "load_tinyshakespeare",
    "tiny_shakespeare_path",
]
