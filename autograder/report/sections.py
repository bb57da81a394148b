"""Where each graded name is taught: the heading just above its exercise cell in the notebook.

The feedback page links each failing function to that heading (`06_autoregressive_lm.ipynb#4.-
Characters-as-tokens`), so a student goes straight from "fix this first" to the text that
teaches it. The headings are read from the course's notebooks (solutions/, else the released
notebooks/, which keep every markdown cell), never typed in twice; without either folder (the
grader installed elsewhere) the page names the notebook and no section.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from autograder.curriculum import NOTEBOOKS

REPO = Path(__file__).resolve().parents[2]
FOLDERS = (REPO / "solutions", REPO / "notebooks")

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")


@dataclass(frozen=True)
class Section:
    filename: str  # "06_autoregressive_lm.ipynb"
    heading: str  # the heading as the student reads it: "4. Characters as tokens"
    anchor: str  # the id Jupyter gives that heading: "4.-Characters-as-tokens"

    @property
    def title(self) -> str:
        """The heading without its "(5 min, ★☆☆)": what a link reads."""
        return re.sub(r"\s*\([^()]*★[^()]*\)", "", self.heading).strip()

    @property
    def href(self) -> str:
        return f"{self.filename}#{self.anchor}"


def heading_text(markdown: str) -> str:
    """A heading's text as rendered: inline code and emphasis markers dropped."""
    text = re.sub(r"`([^`]*)`", r"\1", markdown)
    text = re.sub(r"(\*\*|__|\*)(.+?)\1", r"\2", text)
    return text.strip()


def anchor_of(text: str) -> str:
    """The id nbconvert and JupyterLab give a heading: spaces become '-', the rest is
    URL-quoted as nbconvert does (browsers match a percent-encoded fragment either way)."""
    return quote(text.replace(" ", "-"), safe="?/:@!$&'()*+,;=")


def _grade_id(cell: Mapping[str, Any]) -> str | None:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def sections_of(path: Path, graded: tuple[str, ...]) -> dict[str, Section]:
    """{graded name: Section} for the exercise cells (nbgrader grade_id == name) of one notebook."""
    import nbformat

    nb = nbformat.read(path, as_version=4)
    found, heading = {}, None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            in_fence = False
            for line in cell.source.splitlines():
                if line.lstrip().startswith("```"):
                    in_fence = not in_fence
                match = None if in_fence else _HEADING.match(line)
                if match:
                    heading = heading_text(match.group(2))
        name = _grade_id(cell)
        if name in graded and name not in found and heading:
            found[name] = Section(Path(path).name, heading, anchor_of(heading))
    return found


@cache
def teaching_sections(folders: tuple[Path, ...] = FOLDERS) -> dict[str, Section]:
    """{graded name: Section} over the six notebooks, from the first folder holding each one."""
    sections = {}
    for nb in NOTEBOOKS:
        for folder in folders:
            path = Path(folder) / nb.filename
            if path.is_file():
                try:
                    sections.update(sections_of(path, nb.graded))
                except (OSError, ValueError):
                    continue
                break
    return sections
