"""A user namespace per sandbox, so that root inside is not root outside.

    fd = make_userns(uid)    # an fd of /proc/PID/ns/user for bwrap --userns FD; None if impossible

bubblewrap run by root with --unshare-user maps the sandbox's uid to root outside, and bwrap
resolves every bind source as the uid it runs under, so it cannot simply be started as an
unprivileged user (the Python installation may live under root's private home). Instead the
grader (root) makes the namespace itself: a short-lived helper unshares CLONE_NEWUSER and forbids
namespaces below it (user.max_user_namespaces = 0 inside), the grader writes its maps:

    inside 0   -> outside 0     bwrap's own set-up (mounts, binds) and nothing else
    inside UID -> outside UID   everything the sandbox runs: driver, zygote, kernels

bwrap joins it (--userns) and keeps only CAP_SETUID/CAP_SETGID for the driver, which drops to UID
as its very first step (driver.py), losing every capability. A fresh namespace per sandbox also
gives each sandbox its own user keyrings (which the seccomp filter blocks anyway).
AUTOGRADER_USERNS=0 disables it (to test the fallback): Sandbox(userns=False), from the Config.
"""

import os
import subprocess
import sys

from .processes import reap

UID_BASE = 1_500_000_000  # far above any real account; one uid per concurrent sandbox slot

HELPER = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000) != 0:
    os.write(1, b"E")
    raise SystemExit(1)
try:
    with open("/proc/sys/user/max_user_namespaces", "w") as limit:
        limit.write("0")
    os.write(1, b"R")
except OSError:
    os.write(1, b"L")
os.read(0, 1)
"""


def make_userns(uid: int, gid: int | None = None) -> int | None:
    """A new user namespace mapping 0->0 and uid->uid (root only); its fd, or None."""
    if os.geteuid() != 0:
        return None
    gid = uid if gid is None else gid
    try:
        helper = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", HELPER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd="/",
        )
    except OSError:
        return None
    assert helper.stdout is not None and helper.stdin is not None  # both PIPE
    fd = None
    try:
        if helper.stdout.read(1) != b"R":
            return None
        proc = f"/proc/{helper.pid}"
        with open(f"{proc}/uid_map", "w") as handle:
            handle.write(f"0 0 1\n{uid} {uid} 1\n")
        with open(f"{proc}/gid_map", "w") as handle:
            handle.write(f"0 0 1\n{gid} {gid} 1\n")
        fd = os.open(f"{proc}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
        return fd
    except OSError:
        if fd is not None:
            os.close(fd)
        return None
    finally:
        try:
            helper.stdin.close()
        except OSError:
            pass
        reap(helper)
