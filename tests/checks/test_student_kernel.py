"""`from autograder.checks import check` leaves the student's kernel as it was: importing the
package blocks no module (issue 29: `import webcolors` failed in a notebook after it)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.format_checkers import OPTIONAL

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
before = {k for k, v in sys.modules.items() if v is None}
from autograder.checks import check
import autograder.format_checkers as fc
blocked = sorted(k for k, v in sys.modules.items() if v is None and k not in before)
found = {}
for name in fc.OPTIONAL:
    try:
        __import__(name)
        found[name] = True
    except ImportError as exc:
        found[name] = str(exc)
print(json.dumps({"blocked": blocked, "found": found}))
"""


def run(code):
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def installed(name):
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import importlib.util; print(bool(importlib.util.find_spec({name!r})))",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.stdout.strip() == "True"


@pytest.mark.slow  # imports the checker in fresh interpreters
def test_importing_the_checks_blocks_no_module_in_the_students_process():
    seen = run(PROBE)
    assert seen["blocked"] == []
    for name in OPTIONAL:
        if installed(name):  # what the student could import before, they still can
            assert seen["found"][name] is True, (name, seen["found"][name])


@pytest.mark.slow  # imports the checker in fresh interpreters
def test_the_graders_shortcut_leaves_nothing_blocked_after_it():
    code = (
        "import json, sys\n"
        "from autograder.format_checkers import skip_format_checkers, OPTIONAL\n"
        "skip_format_checkers()\n"
        "import jsonschema._format as f\n"
        "print(json.dumps({'jsonschema': 'jsonschema' in sys.modules,\n"
        "  'blocked': sorted(k for k in OPTIONAL if k in sys.modules and sys.modules[k] is None),\n"
        "  'loaded': sorted(k for k in OPTIONAL if sys.modules.get(k) is not None)}))\n"
    )
    seen = run(code)
    assert seen == {"jsonschema": True, "blocked": [], "loaded": []}
