"""The sandbox on the bubblewrap that courses' images have: Ubuntu 22.04's 0.6.1 (no --size, no
--disable-userns), Debian 12's 0.8.0, Ubuntu 24.04's 0.9.0, and a 0.4.0 (Ubuntu 20.04) that
lacks an option it cannot do without. Each is played by a stand-in `bwrap` put first on PATH
(tests/sandbox/bwrap_standin.py: it refuses every option its version does not have, from bubblewrap's
own history, and otherwise runs the real bwrap), so the real isolation is in force throughout.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from bwrap_standin import refused, standin

from autograder.sandbox import Limits, NotebookJob, Sandbox
from autograder.sandbox.bubblewrap import OPTIONS, BubblewrapUnsupported, probe

REPO = Path(__file__).resolve().parents[2]
MB = 2**20
pytestmark = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="needs the real bubblewrap behind the stand-in"
)


@pytest.fixture(scope="module")
def standins(tmp_path_factory):
    base = tmp_path_factory.mktemp("bwrap")
    return {v: standin(base, v) for v in ("0.4.0", "0.6.1", "0.8.0", "0.9.0")}


def on_path(monkeypatch, folder):
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")


def sandbox_or_skip(limits, **options):
    box = Sandbox(limits, mode="auto", **options)
    if box.mode != "bwrap":
        box.close()
        pytest.skip("bubblewrap cannot create namespaces here")
    return box


@pytest.mark.slow  # probes bubblewrap releases
def test_each_release_is_probed_for_the_options_it_lacks(standins):
    for version, folder in standins.items():
        features = probe(str(folder / "bwrap"))
        assert features.version == version
        used = {"--size", "--disable-userns", "--perms", "--userns", "--cap-add"}
        assert set(features.missing) == used & set(refused(version)), version


@pytest.mark.slow  # runs bubblewrap stand-ins
@pytest.mark.parametrize("identity", ["userns", "user", "root"])
@pytest.mark.parametrize("version", ["0.6.1", "0.8.0", "0.9.0"])
def test_the_sandbox_passes_only_options_its_bubblewrap_has(
    standins, monkeypatch, tmp_path, version, identity
):
    on_path(monkeypatch, standins[version])
    box = sandbox_or_skip(Limits())
    try:
        work = tmp_path / "work"
        (work / "submission").mkdir(parents=True)
        args = box._bwrap_args(work, userns_fd=7, seccomp_fd=8, identity=identity)
        assert args[0] == str(standins[version] / "bwrap")
        assert not set(args) & set(refused(version)), identity
        passed = {a for a in args if a.startswith("--")} | {"--info-fd"}  # _launch adds it
        assert passed <= set(OPTIONS), passed - set(OPTIONS)  # all probed (bubblewrap.py)
        assert ("--size" in args) == (version != "0.6.1")
        capping = box.driver_options(work)
        if version == "0.6.1":  # every tmpfs of the command is capped by the driver instead
            mounts = [args[i + 1] for i, a in enumerate(args) if a == "--tmpfs"]
            assert sorted(c.split("=")[0] for c in capping[1::2]) == sorted(mounts)
            assert "CAP_SYS_ADMIN" in args
            # unprivileged: the sandbox's own namespace must own its mounts to remount them
            assert (identity == "user") == ("--uid" in args)
        else:
            assert capping == [] and "CAP_SYS_ADMIN" not in args
    finally:
        box.close()


FILLER = r"""
import ctypes, errno, os
def fill(folder):
    written = 0
    try:
        with open(os.path.join(folder, "fill.bin"), "wb") as f:
            while written < 64:
                f.write(b"x" * 2**20); f.flush(); written += 1
    except OSError as exc:
        assert exc.errno in (errno.ENOSPC, errno.EFBIG), exc
    finally:
        try: os.remove(os.path.join(folder, "fill.bin"))
        except OSError: pass
    return written
sizes = {name: fill(path) for name, path in
         [("tmp", "/tmp"), ("shm", "/dev/shm"), ("home", os.environ["HOME"]), ("sub", ".")]}
"""
CAPS = (
    "status = open('/proc/self/status').read()\n"
    "caps = {l.split(':')[0]: l.split()[1] for l in status.splitlines() if l.startswith('Cap')}\n"
    "assert all(int(caps[k], 16) == 0 for k in ('CapInh', 'CapPrm', 'CapEff', 'CapAmb')), caps\n"
    "assert 'NoNewPrivs:\\t1' in status\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "assert libc.unshare(0x10000000) == -1  # no user namespace below the sandbox's"
)


@pytest.mark.slow  # runs a notebook in a real sandbox
@pytest.mark.parametrize("userns", ["1", "0"], ids=["own-user-namespace", "root-no-userns"])
def test_under_bubblewrap_0_6_1_every_tmpfs_keeps_its_size_and_no_capability_is_left(
    standins, monkeypatch, tmp_path, userns
):
    """Without --size the driver caps each tmpfs itself: the sizes a notebook can fill are
    those of Limits, exactly as with bwrap's --size, and it holds no capability afterwards."""
    on_path(monkeypatch, standins["0.6.1"])
    limits = Limits(
        timeout=60, tmp_bytes=6 * MB, shm_bytes=3 * MB, home_bytes=5 * MB, submission_bytes=4 * MB
    )
    box = sandbox_or_skip(limits, userns=userns == "1")  # AUTOGRADER_USERNS=userns
    try:
        assert box.size_by_driver and box.features.version == "0.6.1"
        folder = tmp_path / "ada"
        folder.mkdir()
        nb = nbformat.v4.new_notebook()
        report = "assert sizes['tmp'] <= 6 and sizes['shm'] <= 3 and sizes['home'] <= 5, sizes\n"
        report += "assert sizes['sub'] <= 5 and min(sizes.values()) >= 1, sizes"
        nb.cells = [nbformat.v4.new_code_cell(c) for c in (FILLER, report, CAPS)]
        nbformat.write(nb, folder / "01_soft_lookup.ipynb")
        (tmp_path / "requests").mkdir()
        job = NotebookJob("01_soft_lookup", "01_soft_lookup.ipynb", tmp_path / "requests", {})
        run = box.run(folder, [job], tmp_path / "work")["01_soft_lookup"]
        assert run.executed_ok and run.cell_errors == [], run.cell_errors
    finally:
        box.close()


def selftest(args, env_extra, tmp_path, cwd=REPO):
    env = {k: v for k, v in os.environ.items() if k != "AUTOGRADER_SKIP_SELFTEST"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"), **env_extra)
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=900,
    )


@pytest.mark.slow  # runs selftest and grade in children
def test_a_bubblewrap_without_an_essential_option_is_refused_naming_it(standins, tmp_path):
    path = f"{standins['0.4.0']}{os.pathsep}{os.environ['PATH']}"
    done = selftest(["selftest"], {"PATH": path}, tmp_path)
    assert done.returncode == 1
    assert "bubblewrap 0.4.0" in done.stderr and "--perms" in done.stderr
    assert "0.5.0 or newer" in done.stderr and "Traceback" not in done.stderr
    # and grading is refused the same way, never done without the sandbox
    (tmp_path / "class" / "ada").mkdir(parents=True)
    shutil.copy(REPO / "notebooks" / "01_soft_lookup.ipynb", tmp_path / "class" / "ada")
    done = selftest(
        ["grade", str(tmp_path / "class"), "--out", str(tmp_path / "out"), "--quiet"],
        {"PATH": path, "AUTOGRADER_SKIP_SELFTEST": "1"},
        tmp_path,
    )
    assert done.returncode != 0 and "bubblewrap 0.4.0" in done.stderr
    assert not (tmp_path / "out" / "ada" / "results.json").exists()


@pytest.mark.slow  # runs bubblewrap stand-ins
def test_direct_construction_refuses_it_too(standins, monkeypatch):
    on_path(monkeypatch, standins["0.4.0"])
    with pytest.raises(BubblewrapUnsupported, match=r"bubblewrap 0\.4\.0 .*--perms"):
        Sandbox(Limits(), mode="auto")


@pytest.mark.slow
def test_gradescope_setup_self_test_passes_through_bubblewrap_0_6_1(standins, tmp_path):
    """setup.sh's own self-test line, run from the unpacked autograder zip (lib/ holds the
    package, the solutions and the released notebooks) with Ubuntu 22.04's bubblewrap: the
    solutions score full marks and the blank 0 in the sandbox run_autograder uses."""
    from autograder.platforms.gradescope import build_zip

    source = tmp_path / "source"
    build_zip(tmp_path / "autograder.zip", secret="s")
    shutil.unpack_archive(tmp_path / "autograder.zip", source)
    line = next(
        line
        for line in (source / "setup.sh").read_text().splitlines()
        if "autograder selftest" in line
    )
    env = {
        "SOURCE": str(source),
        "VENV": sys.prefix,
        "PATH": f"{standins['0.6.1']}{os.pathsep}{os.environ['PATH']}",
    }
    environment = {k: v for k, v in os.environ.items() if k != "AUTOGRADER_SKIP_SELFTEST"}
    environment.update(env, XDG_CACHE_HOME=str(tmp_path / "cache"))
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", line],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "bubblewrap 0.6.1" in done.stdout
    full = re.search(r"solutions ([\d.]+) / ([\d.]+), blank ([\d.]+) / ", done.stdout)
    assert full and full[1] == full[2] and float(full[2]) > 0 and full[3] == "0", done.stdout
