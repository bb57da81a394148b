"""An open course on attention and transformers: reference answers, checks and the grader."""

import sys

__version__ = "0.1.0"

# nbformat imports jsonschema, whose optional format checkers import rfc3987_syntax, which
# compiles a grammar at import time: about 2.5 CPU-seconds per grading run, for format checks
# that notebook validation never uses. jsonschema skips a checker whose import fails; the
# sandbox's driver blocks the same modules for itself (docs/grader.md, "Speed").
for _optional in ("rfc3987_syntax", "isoduration", "arrow", "fqdn", "uri_template", "webcolors"):
    sys.modules.setdefault(_optional, None)
