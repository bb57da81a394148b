"""The one jinja2 environment of the report's templates (feedback.html, class.html).

    environment().get_template("feedback.html.j2").render(**context)

Compiled once per process: compiling the template took ~0.15 CPU-s per student.
"""

import functools
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

TEMPLATES = Path(__file__).resolve().parent / "templates"


@functools.cache
def environment():
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["points"] = lambda x: f"{x:g}" if isinstance(x, int | float) else str(x)
    return env
