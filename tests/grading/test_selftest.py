"""The self-test that guards every grading run (autograder/grading/selftest.py): it runs once per
environment (a pass is cached under a key that changes with the environment), it refuses to
grade when the sandbox fails and names the cause, and skipping it is possible and loud.

The self-test's grading itself (the solutions at full marks and a blank at 0 through a real
sandbox) is run in tests/sandbox/test_bwrap_versions.py, through Ubuntu 22.04's bubblewrap."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograder.config import Config
from autograder.grading import selftest
from autograder.sandbox import Limits

REPO = Path(__file__).resolve().parents[2]

BROKEN_BWRAP = """#!{python} -IS
import os, sys
args = sys.argv[1:]
if "--tmpfs" in args and "--version" not in args:  # every real sandbox; not the probes
    sys.stderr.write("bwrap: Can't mount tmpfs on /newroot/tmp: Operation not permitted\\n")
    sys.exit(1)
os.execv({real!r}, [{real!r}, *args])
"""


def fake_sandbox(**limits):
    return SimpleNamespace(mode="none", bwrap=None, limits=Limits(**limits), coursedata=None)


@pytest.fixture
def counted(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(selftest.SKIP_ENV, raising=False)
    calls = []

    def run(sandbox, config, workers=2, work_root=None):
        calls.append(sandbox)
        if getattr(sandbox, "fails", False):
            raise selftest.SelfTestFailed("the solutions scored 0 / 88.5")
        return {"scores": {"solutions": [88.5, 88.5], "blank": [0, 88.5]}, "seconds": 1.0}

    monkeypatch.setattr(selftest, "run", run)
    return calls


def test_a_pass_is_remembered_per_environment(counted, capsys):
    selftest.guard(fake_sandbox(), Config())
    selftest.guard(fake_sandbox(), Config())
    assert len(counted) == 1  # the same environment: graded once
    selftest.guard(fake_sandbox(memory_bytes=2**30), Config())  # other limits: another environment
    assert len(counted) == 2
    selftest.guard(fake_sandbox(), Config(), fresh=True)  # `python -m autograder selftest`
    assert len(counted) == 3
    assert "self-test passed" in capsys.readouterr().err


def test_a_failure_is_not_remembered_and_refuses(counted):
    broken = fake_sandbox()
    broken.fails = True
    for _ in range(2):
        with pytest.raises(selftest.SelfTestFailed, match="0 / 88.5"):
            selftest.guard(broken, Config())
    assert len(counted) == 2


def _entry(tmp_path):
    [entry] = (tmp_path / "cache" / "autograder" / "selftest").glob("*.json")
    return entry


@pytest.mark.parametrize(
    "content, why",
    [
        ("{}", "does not hold the key"),
        ("[]", "not a self-test's report"),
        ("not json", "is not JSON"),
        ('{"key": "KEY"}', "no scores"),
        ('{"key": "KEY", "scores": {"solutions": [0, 88.5], "blank": [0, 88.5]}, "seconds": 1}', "not a pass"),
        ('{"key": "KEY", "scores": {"solutions": [88.5, 88.5], "blank": [3, 88.5]}, "seconds": 1}', "not a pass"),
        ('{"key": "KEY", "scores": {"solutions": [0, 0], "blank": [0, 0]}, "seconds": 1}', "not a pass"),
        ('{"key": "KEY", "scores": {"solutions": [NaN, NaN], "blank": [0, 1]}, "seconds": 1}', "no scores"),
        ('{"key": "other", "scores": {"solutions": [88.5, 88.5], "blank": [0, 88.5]}, "seconds": 1}', "does not hold the key"),
    ],
)  # fmt: skip
def test_a_cache_entry_counts_only_with_its_key_and_a_pass(counted, tmp_path, capsys, content, why):
    """Any JSON file named after the cache key, even {}, once counted as a pass."""
    selftest.guard(fake_sandbox(), Config())
    entry = _entry(tmp_path)
    key = entry.stem
    assert json.loads(entry.read_text())["key"] == key  # what a pass keeps
    selftest.guard(fake_sandbox(), Config())
    assert len(counted) == 1  # honoured
    entry.write_text(content.replace("KEY", key))
    capsys.readouterr()
    selftest.guard(fake_sandbox(), Config())
    assert len(counted) == 2  # ignored, and the self-test ran again
    err = capsys.readouterr().err
    assert f"the cached entry {entry} is ignored" in err and why in err
    assert json.loads(entry.read_text())["key"] == key  # the new pass replaced it
    selftest.guard(fake_sandbox(), Config())
    assert len(counted) == 2


@pytest.mark.parametrize("kind", ["link", "folder", "fifo", "huge"])
def test_a_cache_entry_that_is_no_file_is_ignored(counted, tmp_path, capsys, kind):
    selftest.guard(fake_sandbox(), Config())
    entry = _entry(tmp_path)
    good = entry.read_text()
    entry.unlink()
    if kind == "link":
        (tmp_path / "elsewhere.json").write_text(good)
        entry.symlink_to(tmp_path / "elsewhere.json")
    elif kind == "folder":
        entry.mkdir()
    elif kind == "fifo":
        os.mkfifo(entry)
    else:
        entry.write_text(good[:-1] + ", " + '"pad": "' + "x" * 2**20 + '"}')
    capsys.readouterr()
    selftest.guard(fake_sandbox(), Config())  # a folder cannot even be replaced: tested each time
    assert len(counted) == 2
    assert "is ignored" in capsys.readouterr().err


def test_the_key_follows_the_environment(monkeypatch):
    base = selftest.environment(fake_sandbox(), Config())
    assert selftest.environment(fake_sandbox(), Config()) == base
    assert selftest.environment(fake_sandbox(timeout=5), Config()) != base
    monkeypatch.setattr(selftest, "_tree_digest", lambda digest, *a: digest.update(b"edited"))
    assert selftest.environment(fake_sandbox(), Config())["course"] != base["course"]


@pytest.mark.parametrize("how", ["flag", "env"])
def test_skipping_is_possible_and_loud(counted, monkeypatch, capsys, how):
    if how == "env":
        monkeypatch.setenv(selftest.SKIP_ENV, "1")
    assert selftest.guard(fake_sandbox(), Config(skip_selftest=how == "flag")) is None
    assert counted == []
    assert "self-test is SKIPPED" in capsys.readouterr().err


@pytest.fixture
def broken_bwrap(tmp_path):
    real = shutil.which("bwrap")
    if real is None:
        pytest.skip("needs bubblewrap")
    folder = tmp_path / "broken"
    folder.mkdir()
    script = folder / "bwrap"
    script.write_text(BROKEN_BWRAP.format(python=sys.executable, real=real))
    script.chmod(0o755)
    return folder


def grade(tmp_path, broken_bwrap, *extra):
    (tmp_path / "class" / "ada").mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "solutions" / "01_soft_lookup.ipynb", tmp_path / "class" / "ada")
    env = {k: v for k, v in os.environ.items() if k != selftest.SKIP_ENV}
    env.update(
        PATH=f"{broken_bwrap}{os.pathsep}{os.environ['PATH']}",
        XDG_CACHE_HOME=str(tmp_path / "cache"),
    )
    out = tmp_path / "out"
    command = [sys.executable, "-m", "autograder", "grade", str(tmp_path / "class")]
    command += ["--out", str(out), "--quiet", "--secret", "s", "--workers", "2", *extra]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=600), out


@pytest.mark.slow  # grades in a real sandbox
def test_grading_is_refused_when_the_sandbox_fails_and_the_cause_is_named(tmp_path, broken_bwrap):
    done, out = grade(tmp_path, broken_bwrap)
    if "cannot create namespaces" in done.stderr or "WITHOUT a filesystem" in done.stderr:
        pytest.skip("bubblewrap cannot create namespaces here")
    assert done.returncode != 0
    assert "self-test failed, so it will not grade" in done.stderr
    assert "Can't mount tmpfs on /newroot/tmp" in done.stderr  # what bubblewrap said
    assert "bubblewrap 0." in done.stderr  # ... named with its version
    assert "AUTOGRADER_SKIP_SELFTEST=1" in done.stderr  # the way out, named
    assert not (out / "ada" / "results.json").exists() and not (out / "grades.csv").exists()


@pytest.mark.slow  # grades in a real sandbox
def test_skipping_it_grades_anyway_with_warnings_before_and_after(tmp_path, broken_bwrap):
    done, out = grade(tmp_path, broken_bwrap, "--skip-selftest")
    assert "self-test: grading" not in done.stderr
    assert done.stderr.count("self-test is SKIPPED") == 2, done.stderr[-2000:]
    assert (out / "ada" / "results.json").exists()
