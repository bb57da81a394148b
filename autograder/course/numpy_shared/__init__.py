"""What the NumPy notebooks (01-04) share: how a call is labelled and its data built (cases.py),
the judges several of them use and how one call is read and checked (judges*.py), how a mistake
is read from plain data (signatures.py), and the building blocks of the known-wrong variants with
the lookup of a function's variants in its notebook's folder (variants.py). judges*.py and
signatures.py ship in the student handout; cases.py and variants.py never do."""
