"""The sandbox's own Python files are compiled once per grading run (sandbox/bytecode.py), as
checked-hash pycs: a compiled file is used only while it belongs to its source."""

import importlib.util
import os
import subprocess
import sys
import warnings
from pathlib import Path

from autograder.sandbox import Limits, Sandbox
from autograder.sandbox.bytecode import compile_tree

CHECKED_HASH = 0b11  # PEP 552: the flags word of a hash-based pyc whose source is checked


def _flags(pyc: Path) -> int:
    return int.from_bytes(pyc.read_bytes()[4:8], "little")


def _run(root: Path, code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()


def test_a_compiled_file_is_used_and_a_changed_source_wins_over_it(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    source = package / "answer.py"
    source.write_text("VALUE = 'aaaa'\n")
    assert compile_tree(tmp_path)
    pyc = Path(importlib.util.cache_from_source(str(source)))
    assert _flags(pyc) == CHECKED_HASH

    code = "import pkg.answer as a; print(a.VALUE, a.__cached__ is not None)"
    assert _run(tmp_path, code) == "aaaa True"
    # the same size and modification time, other bytes: a timestamp pyc would still be run
    stat = source.stat()
    source.write_text("VALUE = 'bbbb'\n")
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert source.stat().st_size == stat.st_size
    assert _run(tmp_path, code).startswith("bbbb")


def test_the_sandboxes_library_is_compiled_before_it_is_shared():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # no bubblewrap here: not this test's
        box = Sandbox(Limits(timeout=30), warm=False)
    try:
        harness = box.lib / "lib" / "autograder" / "harness"
        sources = sorted(harness.glob("*.py")) + [box.lib / "zygote.py"]
        assert len(sources) > 5
        for source in sources:
            pyc = Path(importlib.util.cache_from_source(str(source)))
            assert _flags(pyc) == CHECKED_HASH, source.name
            assert pyc.stat().st_mode & 0o022 == 0  # nobody else may write it
    finally:
        box.close()
