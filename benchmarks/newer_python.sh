#!/usr/bin/env bash
# The student handout on a newer Python and another PyTorch than the course's own (3.11, 2.13.0):
# a Debian 13 (trixie) root, built here with debootstrap, has Python 3.13 and Debian's own CPU
# PyTorch (python3-torch, 2.6). In it:
#   1. the handout is published as a git repository, as a course would publish it;
#   2. a venv that sees Debian's packages (--system-site-packages, as Colab's Python sees its
#      own) runs the handout notebooks' Colab cell, Colab faked by COLAB_RELEASE_TAG: the cell
#      installs the checker from that repository and must keep Debian's torch and numpy (the
#      preinstalled-torch simulation, with a torch other than the course's);
#   3. the released notebooks run through a kernel of that venv: every check must wait
#      ("is not implemented yet"), no cell may fail;
#   4. the solved notebooks (the solutions, hidden tests and outputs cleared) run the same way:
#      every check must pass.
#
# Usage, as root: bash benchmarks/newer_python.sh [--wait-for FILE] [--cache DIR] [ROOT]
# ROOT is kept for a second run (default: a new folder under /var/tmp, removed at the end).
# --wait-for FILE: build the root first, then wait until FILE exists before steps 1-4 (they need
#   the course's venv, .venv): .ci/run starts this in the background before it installs the
#   venv, and touches FILE once it has. FILE holding "abandon" ends the script (exit 3).
# --cache DIR: keep debootstrap's .debs there for the next run.
# The root: debootstrap's minimal base, then Debian's packages with apt-get (about 350 packages,
# 330 MB of downloads from deb.debian.org); needs debootstrap (installed with apt-get if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
COURSE=$PWD
PYTHON=${PYTHON:-$COURSE/.venv/bin/python}
SUITE=${SUITE:-trixie}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
# debootstrap installs the base, apt-get the rest (debootstrap's own resolver, given them all
# with --include, left python3-zmq unconfigured)
BASE=python3,python3-venv,python3-pip,ca-certificates
PACKAGES="python3-torch python3-numpy python3-matplotlib python3-tqdm python3-nbformat"
PACKAGES="$PACKAGES python3-ipykernel python3-nbclient git"

WAIT_FOR=""
CACHE=()
ROOT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --wait-for) WAIT_FOR="$2"; shift 2 ;;
        --cache) mkdir -p "$2"; CACHE=(--cache-dir="$(cd "$2" && pwd)"); shift 2 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) ROOT="$1"; shift ;;
    esac
done

if [ "$(id -u)" != 0 ]; then
    echo "this builds a root with debootstrap and runs in it with chroot: run it as root" >&2
    exit 2
fi
command -v debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap; }

KEEP=1
if [ -z "$ROOT" ]; then
    ROOT=$(mktemp -d /var/tmp/newer-python.XXXXXX)
    KEEP=0
fi
cleanup() {
    umount "$ROOT/proc" 2>/dev/null || true
    if [ "$KEEP" = 0 ]; then rm -rf --one-file-system "$ROOT" "$ROOT.debootstrap.log"; fi
}
trap cleanup EXIT

started=$SECONDS
if [ ! -x "$ROOT/usr/bin/python3" ] || ! chroot "$ROOT" python3 -c "import torch, nbclient" 2>/dev/null; then
    echo "== debootstrap $SUITE into $ROOT, with Debian's PyTorch, NumPy, Matplotlib, Jupyter kernel and nbclient"
    debootstrap --variant=minbase --include="$BASE" "${CACHE[@]}" \
        "$SUITE" "$ROOT" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 ||
        { tail -20 "$ROOT.debootstrap.log"; exit 1; }
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
    # shellcheck disable=SC2086 # PACKAGES is a list of names
    chroot "$ROOT" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install \
        -y -qq --no-install-recommends $PACKAGES >/dev/null"
fi
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
echo "   root ready in $((SECONDS - started)) s: $(chroot "$ROOT" python3 --version)," \
    "Debian's torch $(chroot "$ROOT" python3 -c 'import torch; print(torch.__version__)')"

if [ -n "$WAIT_FOR" ]; then
    waited=$SECONDS
    until [ -e "$WAIT_FOR" ]; do sleep 2; done
    if grep -q abandon "$WAIT_FOR" 2>/dev/null; then
        echo "   the course's venv was not installed: nothing to run"
        exit 3
    fi
    echo "   waited $((SECONDS - waited)) s for the course's venv"
fi
# pip in the root trusts what pip here trusts (a machine whose TLS goes through its own CA)
HOST_CA=${PIP_CERT:-$("$PYTHON" -m pip config list 2>/dev/null | sed -n "s/^[^=]*\.cert='\(.*\)'$/\1/p" | head -n 1)}
PIP_CERT_ENV=()
if [ -n "$HOST_CA" ] && [ -f "$HOST_CA" ]; then
    cp "$HOST_CA" "$ROOT/etc/ssl/certs/host-ca.crt"
    PIP_CERT_ENV=(PIP_CERT=/etc/ssl/certs/host-ca.crt)
fi
mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"

echo "== the handout, published as a git repository at /work/published in the root"
rm -rf "$ROOT/work"
mkdir -p "$ROOT/work"
"$PYTHON" - "$ROOT/work" <<'EOF'
import sys
from pathlib import Path

import nbformat
from nbgrader.preprocessors import ClearHiddenTests, ClearOutput

from autograder.curriculum import NOTEBOOKS
from autograder.handout import build_handout
from autograder.release import SOLUTIONS

work = Path(sys.argv[1])
build_handout(work / "published", repository="file:///work/published")
(work / "solved").mkdir()
# the graded notebooks: each must have checks (an optional one, like 05b, has none)
(work / "graded.txt").write_text("\n".join(nb.filename for nb in NOTEBOOKS) + "\n")
for nb in NOTEBOOKS:  # as a student who solved everything would hand it in
    solved = nbformat.read(SOLUTIONS / nb.filename, as_version=4)
    for step in (ClearHiddenTests, ClearOutput):
        solved, _ = step().preprocess(solved, {})
    nbformat.write(solved, work / "solved" / nb.filename)
EOF
git -C "$ROOT/work/published" init -q -b main
git -C "$ROOT/work/published" add -A
git -C "$ROOT/work/published" -c user.name=course -c user.email=course@example.org \
    commit -q -m "the handout"

echo "== the Colab cell in a venv over Debian's packages (Colab faked by COLAB_RELEASE_TAG)"
chroot "$ROOT" python3 -m venv --system-site-packages /work/venv
"$PYTHON" -c "
import nbformat, sys
cell = nbformat.read(sys.argv[1], as_version=4).cells[0]
assert cell.id == 'colab-setup', cell.id
open(sys.argv[2], 'w').write(cell.source)
" "$ROOT/work/published/notebooks/01_soft_lookup.ipynb" "$ROOT/work/colab_cell.py"
before=$(chroot "$ROOT" /work/venv/bin/python -c 'import torch, numpy; print(torch.__version__, torch.__file__, numpy.__version__, numpy.__file__)')
chroot "$ROOT" env -i PATH=/usr/bin:/bin HOME=/root COLAB_RELEASE_TAG=simulated "${PIP_CERT_ENV[@]}" \
    bash -c 'cd /work && /work/venv/bin/python colab_cell.py'
after=$(chroot "$ROOT" /work/venv/bin/python -c 'import torch, numpy; print(torch.__version__, torch.__file__, numpy.__version__, numpy.__file__)')
echo "   torch and numpy before: $before"
echo "   torch and numpy after:  $after"
[ "$before" = "$after" ] || { echo "the Colab cell replaced torch or numpy" >&2; exit 1; }

echo "== the released and the solved notebooks through a kernel of that venv"
chroot "$ROOT" /work/venv/bin/python -m ipykernel install --prefix /work/jupyter \
    --name handout-venv >/dev/null
cat >"$ROOT/work/run_notebooks.py" <<'EOF'
"""Run every notebook of a folder through the venv's kernel; check what each check cell says."""
import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

folder, expect = Path(sys.argv[1]), sys.argv[2]  # expect: "waits" or "passes"
failures = 0
for path in sorted(folder.glob("*.ipynb")):
    nb = nbformat.read(path, as_version=4)
    env = {**os.environ, "NBGRADER_EXECUTION": "autograde"}  # the notebooks' quick mode
    NotebookClient(
        nb, timeout=900, kernel_name="handout-venv", allow_errors=True,
        resources={"metadata": {"path": str(folder)}},
    ).execute(env=env)
    checks, errors = {}, []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                errors.append(f"{out.ename}: {out.evalue}")
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if grade_id.startswith("test_"):
            name = grade_id.removeprefix("test_")
            checks[name] = "".join(o.get("text", "") for o in cell.outputs if "text" in o)
    wanted = {"waits": "is not implemented yet", "passes": "passes all"}[expect]
    bad = [name for name, text in checks.items() if wanted not in text]
    graded = path.name in Path("/work/graded.txt").read_text().split()
    failures += bool(errors or bad or (graded and not checks))
    print(f"   {path.name}: {len(checks) - len(bad)}/{len(checks)} checks {expect}"
          + "".join(f"\n      error: {e[:300]}" for e in errors)
          + "".join(f"\n      {name}: {checks[name].strip()[:300]}" for name in bad))
sys.exit(1 if failures else 0)
EOF
status=0
for folder in published/notebooks:waits solved:passes; do
    chroot "$ROOT" env -i PATH=/usr/bin:/bin HOME=/root JUPYTER_PATH=/work/jupyter/share/jupyter \
        python3 /work/run_notebooks.py "/work/${folder%%:*}" "${folder##*:}" || status=1
done
echo "== $( [ $status = 0 ] && echo passed || echo FAILED ) in $((SECONDS - started)) s" \
    "($(chroot "$ROOT" python3 --version), torch" \
    "$(chroot "$ROOT" python3 -c 'import torch; print(torch.__version__)'))"
exit $status
