"""What this machine's bubblewrap can do: its version and the options the sandbox needs.

    features = probe("/usr/bin/bwrap")    # once per grading process (cached per binary)
    features.version                      # "0.6.1"
    features.has("--size")                # False before bubblewrap 0.7.0
    features.unsupported(needed)          # None, or one sentence naming the version and the fix

Each option is probed by asking bwrap to parse it and then print its version
(`bwrap --size 4096 --tmpfs /x --version`): bwrap parses its arguments in order and stops at
`--version`, so the probe needs no namespace and costs about a millisecond, and an option this
bwrap does not know ends it with "Unknown option". All options are asked in one run; only when
that fails is each asked alone, to name the missing ones.

The options the sandbox passes, with the first bubblewrap release that has each (from
bubblewrap's own history, `git show vX:bubblewrap.c` per release tag). Ubuntu 22.04 ships 0.6.1,
Debian 12 0.8.0, Ubuntu 24.04 0.9.0; Ubuntu 20.04 0.4.0, Debian 11 0.4.1:

    --unshare-{net,pid,ipc,uts,cgroup-try,user}, --seccomp, --ro-bind, --bind,
        --symlink, --proc, --dev, --tmpfs, --dir, --chdir                       0.1.0
    --die-with-parent, --new-session, --hostname, --remount-ro, --info-fd       0.1.8
    --cap-add, --cap-drop                                                       0.2.0
    --userns (join a namespace the grader made)                                 0.4.0
    --perms (modes of the tmpfs mounts and of the folders made for mounts)      0.5.0
    --size (the size cap of each tmpfs)                                         0.7.0
    --disable-userns (no user namespaces below the sandbox's)                   0.8.0

Two of them have a replacement, so the same sandbox runs on older releases (REPLACEABLE):
without --size each tmpfs is mounted uncapped and the driver, holding CAP_SYS_ADMIN of the
sandbox only until then, remounts it with the same size before anything else runs (driver.py,
`--cap-tmpfs`; a grader that is not root then runs the sandbox as uid 0 of its own user
namespace, which is the grader's uid outside, because bwrap's nested namespace for another uid
does not own the mounts); without --disable-userns the seccomp filter already denies new user namespaces
(seccomp.py), so it is only replaceable where that filter exists. Every other option is needed:
without it the grader refuses to run in bubblewrap, and says which option and which version.
"""

import functools
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field

# every option the sandbox passes -> (first release, arguments that exercise it before
# "--version"; an option taking a descriptor is given one, which bwrap only parses there)
OPTIONS = {
    "--unshare-user": ("0.1.0", ["--unshare-user"]),
    "--uid": ("0.1.0", ["--uid", "0"]),
    "--gid": ("0.1.0", ["--gid", "0"]),
    "--unshare-net": ("0.1.0", ["--unshare-net"]),
    "--unshare-pid": ("0.1.0", ["--unshare-pid"]),
    "--unshare-ipc": ("0.1.0", ["--unshare-ipc"]),
    "--unshare-uts": ("0.1.0", ["--unshare-uts"]),
    "--unshare-cgroup-try": ("0.1.0", ["--unshare-cgroup-try"]),
    "--seccomp": ("0.1.0", ["--seccomp", "99"]),
    "--ro-bind": ("0.1.0", ["--ro-bind", "/", "/probe"]),
    "--bind": ("0.1.0", ["--bind", "/", "/probe"]),
    "--symlink": ("0.1.0", ["--symlink", "usr/bin", "/probe"]),
    "--proc": ("0.1.0", ["--proc", "/probe"]),
    "--dev": ("0.1.0", ["--dev", "/probe"]),
    "--tmpfs": ("0.1.0", ["--tmpfs", "/probe"]),
    "--dir": ("0.1.0", ["--dir", "/probe"]),
    "--chdir": ("0.1.0", ["--chdir", "/"]),
    "--die-with-parent": ("0.1.8", ["--die-with-parent"]),
    "--new-session": ("0.1.8", ["--new-session"]),
    "--hostname": ("0.1.8", ["--hostname", "sandbox"]),
    "--remount-ro": ("0.1.8", ["--remount-ro", "/"]),
    "--info-fd": ("0.1.8", ["--info-fd", "99"]),
    "--cap-drop": ("0.2.0", ["--cap-drop", "ALL"]),
    "--cap-add": ("0.2.0", ["--cap-add", "CAP_SETUID"]),
    "--userns": ("0.4.0", ["--userns", "99"]),
    "--perms": ("0.5.0", ["--perms", "0755", "--tmpfs", "/probe"]),
    "--size": ("0.7.0", ["--size", "4096", "--tmpfs", "/probe"]),
    "--disable-userns": ("0.8.0", ["--unshare-user", "--disable-userns"]),
}
REPLACEABLE = {"--size", "--disable-userns"}
UNKNOWN = re.compile(r"[Uu]nknown option:? *(--[\w-]+)")


class BubblewrapUnsupported(Exception):  # noqa: N818 - not a RuntimeError on purpose
    """This bwrap lacks an option the sandbox cannot do without. Deliberately not the
    RuntimeError of a bwrap that cannot create namespaces, which `--sandbox auto` (and
    Gradescope's fallback) answer by running without bubblewrap: an old bubblewrap is refused,
    never silently replaced by less isolation."""


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", text)[:3])


@dataclass(frozen=True)
class Features:
    path: str
    version: str  # "0.6.1", or "" when bwrap did not say
    missing: frozenset = field(default_factory=frozenset)
    said: str = ""  # what bwrap printed when an option was refused

    def has(self, option: str) -> bool:
        return option not in self.missing

    def name(self) -> str:
        return f"bubblewrap {self.version}" if self.version else f"bubblewrap ({self.path})"

    def unsupported(self, needed: Iterable[str]) -> str | None:
        """One sentence saying why this bwrap cannot run the sandbox, or None. `needed`: the
        options this sandbox cannot do without (those of OPTIONS minus what it can replace)."""
        lacking = sorted(o for o in needed if o in self.missing)
        if not lacking:
            return None
        since = max((OPTIONS[o][0] for o in lacking if o in OPTIONS), key=version_tuple)
        return (
            f"{self.name()} at {self.path} does not support {', '.join(lacking)}; the grader's "
            f"sandbox needs bubblewrap {since} or newer (Ubuntu 22.04's 0.6.1, Debian 12's "
            "0.8.0 and Ubuntu 24.04's 0.9.0 all work). Install a newer bubblewrap (your "
            "distribution's backports, or github.com/containers/bubblewrap); `--sandbox none` "
            "grades without bubblewrap, and without its isolation"
        )


def _run(bwrap: str, args: list[str]) -> tuple[bool, str, str]:
    try:
        done = subprocess.run(
            [bwrap, *args, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, "", str(exc)
    out = done.stdout.decode(errors="replace").strip()
    return done.returncode == 0, out, done.stderr.decode(errors="replace").strip()


@functools.cache
def probe(bwrap: str) -> Features:
    """The Features of the bwrap at `bwrap` (a path). One run when every option is known."""
    ok, out, err = _run(bwrap, [])
    version = ".".join(map(str, version_tuple(out))) if ok else ""
    every = [arg for _, args in OPTIONS.values() for arg in args]
    ok, _, said = _run(bwrap, every)
    if ok:
        return Features(bwrap, version)
    missing = {option for option, (_, args) in OPTIONS.items() if not _run(bwrap, args)[0]}
    if not missing:  # refused for another reason: name none, keep what it said
        missing = {m for m in UNKNOWN.findall(said) if m in OPTIONS}
    return Features(bwrap, version, frozenset(missing), said[:300])
