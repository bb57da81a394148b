"""The one jinja2 environment of the report's templates (feedback.html, class.html).

    environment().get_template("feedback.html.j2").render(**context)

Compiled once per process: compiling the template took ~0.15 CPU-s per student. Every value a
template prints goes through bidi_markers first (jinja2's `finalize`), then autoescape.
"""

import functools
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from autograder.escaping import bidi_markers

TEMPLATES = Path(__file__).resolve().parent / "templates"


@functools.cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_shown,
    )
    env.filters["points"] = lambda x: f"{x:g}" if isinstance(x, int | float) else str(x)
    return env


def _shown(value: object) -> object:
    """What a template prints for `value`: bidi controls as visible markers (escaping.py)."""
    if isinstance(value, Markup):
        return Markup(bidi_markers(value))  # the markers hold nothing HTML reads
    if isinstance(value, str):
        return bidi_markers(value)
    return value
