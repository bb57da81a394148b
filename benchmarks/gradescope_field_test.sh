#!/usr/bin/env bash
# The Gradescope field test: Gradescope's life cycle reproduced in a fresh root, as root.
#
#   sudo benchmarks/gradescope_field_test.sh [--suite bookworm] [--mirror URL] [--work DIR]
#        [--image NAME] [--components "main"] [--wheels DIR] [--torch-source "PIP OPTIONS"]
#        [--script PATH] [--modes "userns no-userns ..."] [--runs N] [--cpu N] [--no-standalone]
#        [--no-check-gpg] [--python-from-source DEBIAN_VERSION] [--keep]
#
# 1. builds the autograder zip (`python -m autograder gradescope`, a fixed test secret);
# 2. builds a fresh root with debootstrap (--variant=minbase; default Debian 12 "bookworm" from
#    http://deb.debian.org/debian; the .debs are cached in WORK/debs for the next run);
#    The suite's -updates is added to its apt sources, as on the images Gradescope builds on.
# 3. lays out /autograder as Gradescope's documentation describes (source/ = the unpacked zip,
#    run_autograder copied beside it, submission/ and results/) and runs the zip's setup.sh in
#    it as root, as Gradescope does when it builds the image (log: WORK/setup.log);
# 4. grades the solutions, a blank submission and one with a mistake through
#    /autograder/run_autograder in each sandbox mode (with a user namespace per sandbox; with
#    user namespaces refused; with no namespaces at all, Docker's defaults), each on one CPU
#    (taskset; --cpu, default 0), then (unless --no-standalone) the same three with the standalone
#    `python -m autograder grade` on this machine, and prints the table: image, sandbox mode,
#    the three scores, CPU-s per submission (benchmarks/gradescope_field.py; medians of --runs
#    runs; logs and results.json of every run in WORK/logs-SUITE). Each run must prove its mode
#    by what it did: run_autograder's own log line `sandbox: KIND, uid UID` and the run's
#    processes as /proc shows them (uid, user and pid namespaces, bubblewrap among the
#    ancestors, capabilities) must both say the mode's sandbox (userns: bwrap-userns; no-userns:
#    bwrap-root; no-namespaces: student-user), else the row says MISMATCH and the script exits 1.
#
# Needs: root, debootstrap, unshare/chroot/taskset (util-linux), the project's venv (.venv, or
# $PYTHON), network access to the suite's mirror and to PyPI. Takes 15-30 minutes.
#
# torch: setup.sh installs torch from PyTorch's CPU index, which this machine cannot reach. This
# machine's pip finds torch==2.13.0 (+cpu) as a local wheel: /etc/xdg/pip/pip.conf (and
# $PIP_FIND_LINKS) say find-links = /opt/wheels. The script mounts that folder (--wheels,
# default /opt/wheels, or the first find-links of `pip config list`) read-only at /opt/wheels in
# the root and runs setup.sh with AUTOGRADER_TORCH_SOURCE="--find-links /opt/wheels" (setup.sh's
# only knob; everything else comes from PyPI as on Gradescope). On a machine that reaches
# download.pytorch.org, pass --wheels "" to install torch exactly as Gradescope does. pip in the
# root also gets this machine's certificate bundle (PIP_CERT; pip config's `cert`), since PyPI
# may be reached through a proxy whose authority only this machine trusts.
#
# --torch-source replaces that AUTOGRADER_TORCH_SOURCE (e.g. "--no-index --find-links
# /opt/wheels": torch and everything it needs from the mounted folder, nothing from an index).
#
# Ubuntu (Gradescope's usual base): --suite jammy --mirror http://archive.ubuntu.com/ubuntu
# --components "main universe" --image "Ubuntu 22.04". debootstrap needs Ubuntu's archive key
# (Debian does not package ubuntu-keyring), so add --no-check-gpg on a Debian host.
# Ubuntu 24.04 (Python 3.12): --suite noble, the same options, and where this debootstrap has no
# script for noble (Debian 12's), --script /usr/share/debootstrap/scripts/gutsy (Ubuntu's one
# script since 7.10). PyTorch's CPU index is the only source of a CPU torch 2.13.0 for Python
# 3.12; where it cannot be reached, PyPI's (CUDA) build and its nvidia-* wheels, downloaded once
# into a folder (`pip download torch==2.13.0 --python-version 3.12 --only-binary=:all: -d DIR`
# with the manylinux platforms), serve: --wheels DIR --torch-source "--no-index --find-links
# /opt/wheels". On a machine without a GPU that build runs the same CPU kernels.
#
# --python-from-source DEBIAN_VERSION (e.g. 3.11.2-6+deb12u6): a stand-in for the deadsnakes PPA,
# for a machine that cannot reach Launchpad. Ubuntu 22.04's python3.11 is a release candidate,
# which setup.sh refuses before it adds the PPA. With this option, before setup.sh runs, the root
# gets a final CPython built from Debian's source of python3.X at that version: the .dsc from
# deb.debian.org's pool, its .orig tarball checked against the .dsc's SHA-256 (both cached in
# WORK/python-src; the .dsc's own signature is not checked), built in the root with the suite's
# build-essential and -dev packages (./configure --prefix=/usr/local, no PGO/LTO, make -j2, make
# altinstall; log: WORK/python-build.log). /usr/local/bin/python3.X is then first on PATH, where
# the PPA's would be, and setup.sh runs unchanged; the build tools stay in the root.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SUITE=bookworm
MIRROR=http://deb.debian.org/debian
COMPONENTS=main
IMAGE=""
WORK=/var/tmp/gradescope-field
WHEELS=unset
TORCH_SOURCE=""
SCRIPT=()
MODES="userns no-userns no-namespaces"
RUNS=1
CPU=0
STANDALONE=()
GPG=()
KEEP=0
PY_SOURCE=""
DEBIAN_POOL=http://deb.debian.org/debian/pool/main
PYTHON="${PYTHON:-$REPO/.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON=python3

while [ $# -gt 0 ]; do
    case "$1" in
        --suite) SUITE="$2"; shift 2 ;;
        --mirror) MIRROR="$2"; shift 2 ;;
        --components) COMPONENTS="$2"; shift 2 ;;
        --image) IMAGE="$2"; shift 2 ;;
        --work) WORK="$2"; shift 2 ;;
        --wheels) WHEELS="$2"; shift 2 ;;
        --torch-source) TORCH_SOURCE="$2"; shift 2 ;;
        --script) SCRIPT=("$2"); shift 2 ;;
        --modes) MODES="$2"; shift 2 ;;
        --runs) RUNS="$2"; shift 2 ;;
        --cpu) CPU="$2"; shift 2 ;;
        --no-standalone) STANDALONE=(--no-standalone); shift ;;
        --no-check-gpg) GPG=(--no-check-gpg); shift ;;
        --python-from-source) PY_SOURCE="$2"; shift 2 ;;
        --keep) KEEP=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
[ -n "$IMAGE" ] || IMAGE="$SUITE"
if [ "$(id -u)" != 0 ]; then
    echo "the field test runs setup.sh as root in a chroot: run it as root" >&2
    exit 2
fi
if [ "$WHEELS" = unset ]; then
    WHEELS=$(pip config list 2>/dev/null | sed -n "s/^global.find-links='\([^' ]*\).*/\1/p" | head -1)
    [ -n "$WHEELS" ] || WHEELS=/opt/wheels
fi

mkdir -p "$WORK/debs"
WORK="$(cd "$WORK" && pwd)"
ROOT="$WORK/root-$SUITE"
LOGS="$WORK/logs-$SUITE"
FIELD=("$PYTHON" "$REPO/benchmarks/gradescope_field.py")
cleanup() { if [ "$KEEP" = 0 ]; then rm -rf "$ROOT"; fi; }
trap cleanup EXIT

echo "== the zip"
(cd "$REPO" && "$PYTHON" -m autograder gradescope --out "$WORK/autograder.zip" \
    --secret gradescope-field-test)

echo "== a fresh $SUITE root from $MIRROR (debootstrap)"
rm -rf "$ROOT"
started=$SECONDS
debootstrap --variant=minbase --components="${COMPONENTS// /,}" "${GPG[@]}" \
    --cache-dir="$WORK/debs" "$SUITE" "$ROOT" "$MIRROR" "${SCRIPT[@]}" > "$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log"; exit 1; }
echo "   $((SECONDS - started)) s"
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
# as the images Gradescope builds on: the suite's updates too (Ubuntu 22.04's python3.11 is there)
echo "deb $MIRROR $SUITE-updates $COMPONENTS" >> "$ROOT/etc/apt/sources.list"

if [ -n "$PY_SOURCE" ]; then
    # 3.11.2-6+deb12u6 -> upstream 3.11.2, Debian's source package python3.11
    upstream="${PY_SOURCE%%-*}"
    package="python${upstream%.*}"
    echo "== the deadsnakes stand-in: $package $upstream built from Debian's source ($PY_SOURCE)"
    mkdir -p "$WORK/python-src"
    dsc="$WORK/python-src/${package}_$PY_SOURCE.dsc"
    [ -s "$dsc" ] || curl -fsS --retry 3 -o "$dsc" "$DEBIAN_POOL/p/$package/$(basename "$dsc")"
    # the .orig tarball's line of the .dsc's Checksums-Sha256: "SHA256 SIZE NAME"
    read -r sha size tarball < <(sed -n '/^Checksums-Sha256:/,/^[^ ]/p' "$dsc" \
        | grep -E "^ [0-9a-f]{64} [0-9]+ ${package}_$upstream\.orig\.tar\.[a-z0-9]+\$") || true
    [ -n "${tarball:-}" ] || { echo "no .orig tarball in $dsc" >&2; exit 1; }
    if ! echo "$sha  $WORK/python-src/$tarball" | sha256sum --check --status 2>/dev/null; then
        curl -fsS --retry 3 -o "$WORK/python-src/$tarball" "$DEBIAN_POOL/p/$package/$tarball"
    fi
    echo "$sha  $WORK/python-src/$tarball" | sha256sum --check --quiet \
        || { echo "$tarball does not match $dsc" >&2; exit 1; }
    echo "   $tarball: $size bytes, sha256 $sha (as $(basename "$dsc") says)"
    mkdir -p "$ROOT/usr/local/src"
    cp "$WORK/python-src/$tarball" "$ROOT/usr/local/src/$tarball"
    started=$SECONDS
    if ! "${FIELD[@]}" chroot --root "$ROOT" --env DEBIAN_FRONTEND=noninteractive -- bash -c "
        set -euxo pipefail
        apt-get update
        apt-get install -y --no-install-recommends build-essential pkg-config libssl-dev \
            zlib1g-dev libffi-dev libbz2-dev liblzma-dev libsqlite3-dev libreadline-dev \
            libncursesw5-dev uuid-dev libgdbm-dev libexpat1-dev
        cd /usr/local/src && tar xf $tarball && cd Python-$upstream
        ./configure --prefix=/usr/local --with-ensurepip=no
        make -j2
        make altinstall
        cd /usr/local/src && rm -rf Python-$upstream $tarball
        # what the grader needs of it: a final release, venv, and the extension modules
        /usr/local/bin/$package -c 'import sys, ssl, zlib, ctypes, bz2, lzma, sqlite3, ensurepip, venv; \
            assert sys.version_info.releaselevel == \"final\"; sys.get_int_max_str_digits()'
    " > "$WORK/python-build.log" 2>&1; then
        tail -30 "$WORK/python-build.log"
        echo "building $package failed (log: $WORK/python-build.log)" >&2
        exit 1
    fi
    echo "   built in $((SECONDS - started)) s: $(chroot "$ROOT" /usr/local/bin/"$package" --version)" \
        "at /usr/local/bin/$package"
fi

echo "== /autograder as Gradescope lays it out, then setup.sh as root"
mkdir -p "$ROOT/autograder/source" "$ROOT/autograder/submission" "$ROOT/autograder/results"
"$PYTHON" -m zipfile -e "$WORK/autograder.zip" "$ROOT/autograder/source"
chmod 755 "$ROOT/autograder/source/setup.sh" "$ROOT/autograder/source/run_autograder"
cp "$ROOT/autograder/source/run_autograder" "$ROOT/autograder/run_autograder"
SETUP_ENV=()
WHEEL_ARGS=()
# pip trusts the certificates this machine trusts (its pip config's `cert`: a proxy may sign
# PyPI's connections with a local authority that a fresh root does not know)
CERT=$(pip config list 2>/dev/null | sed -n "s/^global.cert='\(.*\)'$/\1/p" | head -1)
[ -n "$CERT" ] || CERT=/etc/ssl/certs/ca-certificates.crt
if [ -f "$CERT" ]; then
    cp "$CERT" "$ROOT/etc/field-test-ca.crt"
    SETUP_ENV+=(--env PIP_CERT=/etc/field-test-ca.crt)
fi
if [ -n "$WHEELS" ]; then
    SETUP_ENV+=(--env "AUTOGRADER_TORCH_SOURCE=${TORCH_SOURCE:---find-links /opt/wheels}")
    WHEEL_ARGS=(--wheels "$WHEELS")
elif [ -n "$TORCH_SOURCE" ]; then
    SETUP_ENV+=(--env "AUTOGRADER_TORCH_SOURCE=$TORCH_SOURCE")
fi
started=$SECONDS
if ! "${FIELD[@]}" chroot --root "$ROOT" "${WHEEL_ARGS[@]}" "${SETUP_ENV[@]}" \
    --env DEBIAN_FRONTEND=noninteractive -- \
    bash -c 'cd /autograder/source && bash ./setup.sh' > "$WORK/setup.log" 2>&1; then
    tail -30 "$WORK/setup.log"
    echo "setup.sh failed (log: $WORK/setup.log)" >&2
    exit 1
fi
echo "   setup.sh: $((SECONDS - started)) s; bubblewrap $(chroot "$ROOT" bwrap --version 2>/dev/null || echo '(none)');" \
    "$(grep -m1 '^the grader runs on' "$WORK/setup.log" || true);" \
    "torch $(chroot "$ROOT" /opt/attention-course-venv/bin/python -c 'import torch; print(torch.__version__)' 2>/dev/null || echo '?')"

echo "== grading: each sandbox mode, on one CPU, then standalone"
# shellcheck disable=SC2086 # MODES is a list of words
"${FIELD[@]}" grade --root "$ROOT" --image "$IMAGE" --modes $MODES --runs "$RUNS" --cpu "$CPU" \
    --logs "$LOGS" "${STANDALONE[@]}"
