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
#
# Another release: --suite, --mirror, --components "main universe", --script FILE (debootstrap's
# script, where this debootstrap has none for the suite) and --no-check-gpg (a key this host
# lacks) go to debootstrap; --packages "..." replaces the apt-get list below.
# --wheels DIR: torch comes from pip instead, as on Colab: DIR is mounted read-only at /opt/wheels
#   in the root and `pip install --break-system-packages --no-index --find-links /opt/wheels
#   TORCH` installs it system-wide there (TORCH: --torch SPEC, default the course's own pin)
#   before step 2, so the Colab cell meets a preinstalled torch it must keep; python3-torch is
#   then left out of the apt-get list.
# Ubuntu 24.04 (Python 3.12), whose archive has no PyTorch and whose NumPy (1.26) and Matplotlib
# (3.6) are older than the checker accepts (the cell installs those from PyPI, as it would on a
# machine without them):
#   bash benchmarks/newer_python.sh --suite noble --mirror http://archive.ubuntu.com/ubuntu \
#     --components "main universe" --script /usr/share/debootstrap/scripts/gutsy --no-check-gpg \
#     --packages "python3-tqdm python3-nbformat python3-ipykernel python3-nbclient git" \
#     --wheels DIR
#   where DIR holds torch 2.13.0's cp312 wheel and its dependencies (PyPI's Linux build, with its
#   nvidia-* wheels: `pip download torch==2.13.0 --python-version 3.12 --only-binary=:all: -d DIR`
#   with the manylinux platforms; it runs on a CPU), or PyTorch's CPU build where that index is
#   reachable.
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
DEBIAN_PACKAGES=$PACKAGES

COMPONENTS=""
SCRIPT=()
GPG=()
WHEELS=""
TORCH=$(sed -n 's/^ *"\(torch==[^"]*\)".*/\1/p' pyproject.toml | head -n 1)

WAIT_FOR=""
CACHE=()
ROOT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --wait-for) WAIT_FOR="$2"; shift 2 ;;
        --cache) mkdir -p "$2"; CACHE=(--cache-dir="$(cd "$2" && pwd)"); shift 2 ;;
        --suite) SUITE="$2"; shift 2 ;;
        --mirror) MIRROR="$2"; shift 2 ;;
        --components) COMPONENTS="$2"; shift 2 ;;
        --script) SCRIPT=("$2"); shift 2 ;;
        --no-check-gpg) GPG=(--no-check-gpg); shift ;;
        --packages) PACKAGES="$2"; shift 2 ;;
        --wheels) WHEELS="$(cd "$2" && pwd)"; shift 2 ;;
        --torch) TORCH="$2"; shift 2 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) ROOT="$1"; shift ;;
    esac
done
COMPONENTS_ARG=()
[ -z "$COMPONENTS" ] || COMPONENTS_ARG=(--components="${COMPONENTS// /,}")
TORCH_FROM="Debian's torch"
if [ -n "$WHEELS" ]; then
    PACKAGES=$(echo " $PACKAGES " | sed 's/ python3-torch / /; s/^ *//; s/ *$//')
    TORCH_FROM="pip's torch (system-wide)"
fi

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
    umount "$ROOT/opt/wheels" 2>/dev/null || true
    if [ "$KEEP" = 0 ]; then rm -rf --one-file-system "$ROOT" "$ROOT.debootstrap.log"; fi
}
trap cleanup EXIT

started=$SECONDS
if [ ! -x "$ROOT/usr/bin/python3" ] || ! chroot "$ROOT" python3 -c "import torch, nbclient" 2>/dev/null; then
    if [ -z "$WHEELS" ] && [ "$PACKAGES" = "$DEBIAN_PACKAGES" ]; then
        echo "== debootstrap $SUITE into $ROOT, with Debian's PyTorch, NumPy, Matplotlib, Jupyter kernel and nbclient"
    else
        echo "== debootstrap $SUITE into $ROOT, with $PACKAGES${WHEELS:+; then $TORCH with pip from $WHEELS}"
    fi
    debootstrap --variant=minbase --include="$BASE" "${COMPONENTS_ARG[@]}" "${GPG[@]}" "${CACHE[@]}" \
        "$SUITE" "$ROOT" "$MIRROR" "${SCRIPT[@]}" >"$ROOT.debootstrap.log" 2>&1 ||
        { tail -20 "$ROOT.debootstrap.log"; exit 1; }
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
    # shellcheck disable=SC2086 # PACKAGES is a list of names
    chroot "$ROOT" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install \
        -y -qq --no-install-recommends $PACKAGES >/dev/null"
    if [ -n "$WHEELS" ]; then
        # torch preinstalled system-wide with pip, as Colab's image has it (its folder read-only)
        mkdir -p "$ROOT/opt/wheels"
        mountpoint -q "$ROOT/opt/wheels" ||
            { mount --bind "$WHEELS" "$ROOT/opt/wheels" && mount -o remount,bind,ro "$ROOT/opt/wheels"; }
        chroot "$ROOT" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root python3 -m pip install --quiet \
            --break-system-packages --root-user-action=ignore --no-index \
            --find-links /opt/wheels "$TORCH"
        umount "$ROOT/opt/wheels"
    fi
fi
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
echo "   root ready in $((SECONDS - started)) s: $(chroot "$ROOT" python3 --version)," \
    "$TORCH_FROM $(chroot "$ROOT" python3 -c 'import torch; print(torch.__version__)')"

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

OS=$(sed -n 's/^NAME="\{0,1\}\([^" ]*\).*/\1/p' "$ROOT/etc/os-release")
echo "== the Colab cell in a venv over $OS's packages (Colab faked by COLAB_RELEASE_TAG)"
chroot "$ROOT" python3 -m venv --system-site-packages /work/venv
# torch's and numpy's version and file, or "absent -" for one the root does not have (the cell
# installs it then): what the root had must be what the venv has after the cell
PROBE='
import importlib.util
found = []
for name in ("torch", "numpy"):
    if importlib.util.find_spec(name) is None:
        found.append("absent -")
    else:
        module = __import__(name)
        found.append(f"{module.__version__} {module.__file__}")
print(*found)'
"$PYTHON" -c "
import nbformat, sys
cell = nbformat.read(sys.argv[1], as_version=4).cells[0]
assert cell.id == 'colab-setup', cell.id
open(sys.argv[2], 'w').write(cell.source)
" "$ROOT/work/published/notebooks/01_soft_lookup.ipynb" "$ROOT/work/colab_cell.py"
before=$(chroot "$ROOT" /work/venv/bin/python -c "$PROBE")
chroot "$ROOT" env -i PATH=/usr/bin:/bin HOME=/root COLAB_RELEASE_TAG=simulated "${PIP_CERT_ENV[@]}" \
    bash -c 'cd /work && /work/venv/bin/python colab_cell.py'
after=$(chroot "$ROOT" /work/venv/bin/python -c "$PROBE")
echo "   torch and numpy before: $before"
echo "   torch and numpy after:  $after"
read -r torch_before torch_file_before numpy_before numpy_file_before <<<"$before"
read -r torch_after torch_file_after numpy_after numpy_file_after <<<"$after"
[ "$torch_before" != absent ] || { echo "the root has no torch" >&2; exit 1; }
[ "$torch_before $torch_file_before" = "$torch_after $torch_file_after" ] &&
    { [ "$numpy_before" = absent ] || [ "$numpy_before $numpy_file_before" = "$numpy_after $numpy_file_after" ]; } ||
    { echo "the Colab cell replaced torch or numpy" >&2; exit 1; }
[ "$numpy_after" != absent ] || { echo "the Colab cell did not install numpy" >&2; exit 1; }

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
