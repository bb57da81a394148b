"""A stand-in `bwrap` that behaves like an older bubblewrap: it answers `--version` with the
version it plays, refuses every option that version does not have ("bwrap: Unknown option X",
exit 1, as bubblewrap does), and otherwise execs the real bwrap with the same arguments and
descriptors.

    folder = standin(tmp_path, "0.6.1")      # folder/bwrap; put folder first on PATH

The options each release added are read from bubblewrap's own source, every option name that
`bubblewrap.c` compares an argument with, per release tag (github.com/containers/bubblewrap,
`git show vX:bubblewrap.c`); written here independently of autograder/sandbox/bubblewrap.py,
and listing every option, not only those the sandbox passes today.
"""

import shutil
import sys
from pathlib import Path

ADDED = {
    "0.1.8": "--block-fd --die-with-parent --hostname --info-fd --new-session --remount-ro "
    "--ro-bind-data --share-net --unshare-all",
    "0.2.0": "--as-pid-1 --cap-add --cap-drop --userns-block-fd",
    "0.3.3": "--dev-bind-try --json-status-fd",
    "0.4.0": "--pidns --userns --userns2",
    "0.5.0": "--chmod --clearenv --perms",
    "0.6.0": "--add-seccomp-fd",
    "0.7.0": "--size",
    "0.8.0": "--assert-userns-disabled --disable-userns",
    "0.9.0": "--argv0",
    "0.10.0": "--bind-fd --ro-bind-fd",
    "0.11.0": "--level-prefix --overlay --overlay-src --ro-overlay --tmp-overlay",
}

SCRIPT = """#!{python} -IS
import os, sys
REFUSED = {refused!r}
args = sys.argv[1:]
if args == ["--version"]:
    print("bubblewrap {version}")
    sys.exit(0)
for arg in args:
    if arg in REFUSED:
        sys.stderr.write("bwrap: Unknown option " + arg + "\\n")
        sys.exit(1)
os.execv({real!r}, [{real!r}, *args])
"""


def _key(version):
    return tuple(int(p) for p in version.split("."))


def refused(version):
    """Every option added after `version`."""
    return sorted(
        option
        for release, options in ADDED.items()
        if _key(release) > _key(version)
        for option in options.split()
    )


def standin(folder, version, real=None):
    real = real or shutil.which("bwrap")
    folder = Path(folder) / f"bwrap-{version}"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "bwrap"
    path.write_text(
        SCRIPT.format(
            python=sys.executable, refused=set(refused(version)), version=version, real=real
        )
    )
    path.chmod(0o755)
    return folder
