"""One version: the package's, pyproject.toml's and CHANGELOG.md's latest release agree."""

import re
import tomllib
from pathlib import Path

import autograder

REPO = Path(__file__).resolve().parents[2]


def released_versions(text):
    """Versions named in the CHANGELOG's headings, leaving out the unreleased section's."""
    found = []
    for heading in re.findall(r"^## (.+)$", text, re.M):
        if heading.lower().startswith("unreleased"):
            continue
        found += re.findall(r"\b(\d+\.\d+\.\d+)\b", heading)
    return sorted(found, key=lambda v: tuple(map(int, v.split("."))))


def test_the_reader_skips_the_unreleased_section():
    text = "## Unreleased (0.3.0)\n\n## 0.1.0 and 0.2.0\n\n## Performance history (0.2.0)\n"
    assert released_versions(text)[-1] == "0.2.0"


def test_the_package_pyproject_and_changelog_agree():
    latest = released_versions((REPO / "CHANGELOG.md").read_text(encoding="utf-8"))[-1]
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert autograder.__version__ == project["version"] == latest
