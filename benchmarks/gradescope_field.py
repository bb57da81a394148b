"""The grading half of the Gradescope field test (benchmarks/gradescope_field_test.sh builds the
root; this grades in it and prints the table).

    python benchmarks/gradescope_field.py grade --root ROOT --image "Debian 12" [--modes ...]
    python benchmarks/gradescope_field.py confine --mode no-userns -- COMMAND ...

`grade` runs Gradescope's per-submission life cycle in ROOT (a chroot whose /autograder/source
holds the unpacked zip and whose setup.sh has run): for each sandbox mode and each submission
(the solutions, a blank submission and one with a mistake), it empties /autograder/submission
and /autograder/results, copies the notebooks and a submission_metadata.json in, and runs
/autograder/run_autograder as root in the chroot, pinned to one CPU (taskset), inside a private
mount namespace with /proc, /dev and /sys mounted as a container has them. The same three
submissions are then graded by the standalone command on this machine
(`taskset -c CPU python -m autograder grade FOLDER --workers 1`) with the same secret and the
same student id, so the scores must match and the CPU-seconds can be compared side by side.

Sandbox modes (what the container allows; `confine` applies it before chroot):
- userns          everything: bubblewrap with a user namespace per sandbox (the grader's best);
- no-userns       new user namespaces refused (seccomp, as many container runtimes do):
                  bubblewrap runs as root without capabilities;
- no-namespaces   no namespaces at all (no CAP_SYS_ADMIN, no user namespaces: Docker's
                  defaults): no bubblewrap; student code runs as the unprivileged user `student`.

Each run proves its mode twice, from the run itself, never from what the harness meant
(`evidence`): run_autograder's log names the sandbox it graded in and the uid student code runs
as (the line `sandbox: KIND, uid UID: ...`, gradescope.py's sandbox_line), and the kernel's
account of the run's processes agrees: while it grades, /proc is sampled for every process of the
run's tree, and each notebook process (the sandbox's driver, zygote and kernels) is recorded with
its real uid, whether it has a user namespace and a pid namespace of its own, whether bubblewrap
is among its ancestors, and its effective capabilities. A run whose log or processes say another
mode than the one the container allowed is marked MISMATCH, and `grade` exits 1.

CPU-seconds are the whole process tree's user+sys time, read from a cgroup of its own
(benchmarks/grade_vs_nbgrader.py's CpuMeter); with --runs N the table shows medians (every run
is printed). Runs are interleaved (each mode and the standalone grader back to back, submission
by submission), so a change in the machine's load touches every row alike. The last line printed is the JSON of every row.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

MODES = ("userns", "no-userns", "no-namespaces")
SUBMISSIONS = {  # name in the table -> folder of notebooks (all six each)
    "solutions": REPO / "examples" / "class" / "ada",
    "blank": REPO / "examples" / "class" / "blank",
    "mistake": REPO / "examples" / "class" / "no_scale",
}
SECRET = "gradescope-field-test"
EMAIL = "field.test@example.edu"

# -- the container's limits ----------------------------------------------------------------------
# Run by the root's own python3 inside the container (after pivot_root the host's venv is gone),
# and exec'd by `confine` here: one text, so the two cannot differ.
CONFINE_PY = r"""
# exec ARGV as a container in MODE would: python3 -I confine.py MODE FILTER -- ARGV
import ctypes
import os
import sys

# prctl(2) and capability numbers (linux/prctl.h, linux/capability.h)
PR_SET_SECCOMP, PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP = 22, 38, 24
SECCOMP_MODE_FILTER, CAP_SYS_ADMIN = 2, 21


class SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def take_away(mode, program):
    # no-namespaces: CAP_SYS_ADMIN out of the bounding set (gone at the next exec); no-userns
    # and no-namespaces: `program`, a seccomp filter refusing new user namespaces
    libc = ctypes.CDLL(None, use_errno=True)
    if mode == "no-namespaces" and libc.prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN)")
    if mode in ("no-userns", "no-namespaces"):
        buffer = ctypes.create_string_buffer(program, len(program))
        fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")


if __name__ == "__main__":
    mode, path, dashes, *command = sys.argv[1:]
    with open(path, "rb") as handle:
        take_away(mode, handle.read())
    os.execvp(command[0], command)
"""


def seccomp_program():
    from autograder.sandbox.seccomp import build_filter

    program = build_filter()  # refuses CLONE_NEWUSER (and the kernel keyring)
    if program is None:
        raise SystemExit("no seccomp filter for this machine's architecture")
    return program


def confine(mode, command):
    """exec `command` with what a container in `mode` refuses taken away (never returns)."""
    if mode not in MODES:
        raise SystemExit(f"unknown mode {mode!r}; one of {MODES}")
    code = {"__name__": "confine"}
    exec(CONFINE_PY, code)  # noqa: S102 - our own text, the one the container runs
    code["take_away"](mode, seccomp_program() if mode != "userns" else b"")
    os.execvp(command[0], command)


# -- what the run itself says about its sandbox ----------------------------------------------------
# the mode the container allows -> the sandbox run_autograder must log (gradescope.sandbox_line)
EXPECTED = {"userns": "bwrap-userns", "no-userns": "bwrap-root", "no-namespaces": "student-user"}
UID_BASE = 1_500_000_000  # autograder/sandbox/userns.py: the first sandbox uid
NOTEBOOK_PROCESSES = ("driver.py", "zygote.py", "ipykernel")  # the sandbox's own processes


def _read(path):
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


class ProcessWatch:
    """Samples /proc while a run goes on: every process descended from `pid` whose command line
    names one of NOTEBOOK_PROCESSES, with what the kernel says of it (its uid, namespaces,
    capabilities, and whether bubblewrap is among its ancestors)."""

    def __init__(self, pid, interval=0.2):
        self.pid, self.interval = pid, interval
        self.seen = {}  # (pid, start time) -> record
        self.own = {ns: os.readlink(f"/proc/self/ns/{ns}") for ns in ("user", "pid")}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    def _loop(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def sample(self):
        parent, comm, stat = {}, {}, {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            raw = _read(entry / "stat")
            if raw is None:
                continue
            text = raw.decode(errors="replace")
            name, rest = text[text.index("(") + 1 : text.rindex(")")], text[text.rindex(")") + 2 :]
            fields = rest.split()
            pid = int(entry.name)
            parent[pid], comm[pid], stat[pid] = int(fields[1]), name, fields[19]  # ppid, start
        for pid in parent:
            chain, at = [], pid
            while at in parent and at != self.pid and len(chain) < 64:
                at = parent[at]
                chain.append(comm.get(at, ""))
            if at != self.pid:
                continue
            cmdline = _read(f"/proc/{pid}/cmdline")
            if not cmdline or not any(n.encode() in cmdline for n in NOTEBOOK_PROCESSES):
                continue
            if comm[pid] == "bwrap":  # bubblewrap itself (its command line names the driver)
                continue
            record = self._record(pid, cmdline, chain)
            if record is not None:  # the latest view (the driver drops to its uid at its start)
                self.seen[(pid, stat[pid])] = record

    def _record(self, pid, cmdline, chain):
        status = _read(f"/proc/{pid}/status")
        try:
            ns = {n: os.readlink(f"/proc/{pid}/ns/{n}") for n in ("user", "pid")}
        except OSError:
            return None
        if status is None:
            return None
        fields = dict(
            line.split(":", 1)
            for line in status.decode(errors="replace").splitlines()
            if ":" in line
        )
        words = [w.decode(errors="replace") for w in cmdline.split(b"\0") if w]
        # the zygote and the warm kernels are forks of the driver: they keep its command line
        kind = "kernel" if any("ipykernel" in w for w in words) else "driver or fork"
        if any(w.endswith("zygote.py") for w in words):
            kind = "kernel launcher"
        return {
            "process": kind,
            "uid": int(fields.get("Uid", "-1").split()[0]),
            "own_userns": ns["user"] != self.own["user"],
            "own_pidns": ns["pid"] != self.own["pid"],
            "under_bwrap": "bwrap" in chain,
            "cap_eff": fields.get("CapEff", "").strip(),
        }


def logged_sandbox(log):
    """(KIND, uid) from run_autograder's `sandbox: KIND, uid UID: ...` line; (None, None) if the
    log has none."""
    import re

    found = re.findall(r"^sandbox: ([\w-]+), uid (\d+):", log, re.M)
    if len(set(found)) != 1:
        return (None, None) if not found else ("several: " + " / ".join(k for k, _ in found), None)
    kind, uid = found[0]
    return kind, int(uid)


def observed_sandbox(records):
    """The sandbox the kernel saw: (KIND, sorted uids) from ProcessWatch records (each process
    as last seen: the driver drops to its uid first thing), where KIND is what all of them agree
    on, "mixed: ..." when they do not, None when none ran."""
    kinds = set()
    for r in records:
        if r["under_bwrap"] and r["own_userns"] and r["uid"] >= UID_BASE and r["own_pidns"]:
            kinds.add("bwrap-userns")
        elif r["under_bwrap"] and not r["own_userns"] and r["uid"] == 0 and r["own_pidns"]:
            kinds.add("bwrap-root")
        elif not r["under_bwrap"] and not r["own_userns"] and not r["own_pidns"] and r["uid"]:
            kinds.add("student-user")
        else:
            kinds.add("other " + json.dumps(r, sort_keys=True))
    if not kinds:
        return None, []
    uids = sorted({r["uid"] for r in records})
    return (kinds.pop() if len(kinds) == 1 else "mixed: " + " / ".join(sorted(kinds))), uids


def evidence(mode, log, records):
    """(ok, one line): does what the run logged, and what its processes were, match `mode`?"""
    want = EXPECTED[mode]
    kind, uid = logged_sandbox(log)
    seen, uids = observed_sandbox(records)
    caps = sorted({r["cap_eff"] for r in records})
    ok = kind == want and seen == want and bool(uids)
    if want == "bwrap-userns":
        ok = ok and uid is not None and uid >= UID_BASE
    elif want == "bwrap-root":
        ok = ok and uid == 0
    else:
        ok = ok and uid is not None and uid > 0 and uids == [uid]
    ok = ok and caps == ["0000000000000000"]  # no notebook process holds a capability
    counts = {}
    for r in records:
        counts[r["process"]] = counts.get(r["process"], 0) + 1
    line = (
        f"log: {kind}, uid {uid}; seen: {seen}, uids {','.join(map(str, uids)) or '-'}, "
        f"kernels' CapEff {','.join(caps) or '-'} "
        f"({', '.join(f'{n} {name}' for name, n in sorted(counts.items()))})"
    )
    return ok, ("" if ok else "MISMATCH: ") + line


# -- one Gradescope run --------------------------------------------------------------------------
MOUNT_SCRIPT = r"""
set -e
root="$1"; wheels="$2"; shift 2
# the root becomes the mount namespace's own root, as a container runtime makes it (pivot_root),
# not a chroot: the kernel refuses new user namespaces to a chrooted process, and bubblewrap
# cannot pivot_root out of one
mount --bind "$root" "$root"
mount --rbind /dev "$root/dev"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys"
if [ -n "$wheels" ]; then
    mkdir -p "$root/opt/wheels"
    mount --bind -o ro "$wheels" "$root/opt/wheels"
fi
mkdir -p "$root/.field-old-root"
cd "$root"
pivot_root . .field-old-root
exec chroot . /bin/sh -c 'umount -l /.field-old-root && rmdir /.field-old-root && exec "$@"' \
    container "$@"
"""
FIELD_DIR = "opt/field-test"  # in the root: confine.py and the seccomp filter


def chroot_command(root, mode, inner, cpu=None, wheels=None, env=()):
    """`inner` run as root in `root` made a container's root: a private mount namespace whose
    root it is, with /dev, /proc and /sys mounted (and `wheels` at /opt/wheels, read-only),
    confined to `mode` by the root's own python3, pinned to `cpu` if given, with a clean
    environment plus `env` ("NAME=value" strings)."""
    inside = [
        "/usr/bin/env",
        "-i",
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    ]
    inside += ["HOME=/root", "LANG=C.UTF-8", *env, *inner]
    if cpu is not None:
        inside = ["taskset", "-c", str(cpu), *inside]
    if mode != "userns":  # nothing to take away otherwise (setup.sh runs before python3 is in)
        field = Path(root) / FIELD_DIR
        field.mkdir(parents=True, exist_ok=True)
        (field / "confine.py").write_text(CONFINE_PY)
        (field / "seccomp.bpf").write_bytes(seccomp_program())
        confine_py, program = f"/{FIELD_DIR}/confine.py", f"/{FIELD_DIR}/seccomp.bpf"
        inside = ["python3", "-I", confine_py, mode, program, "--", *inside]
    mounts = ["unshare", "--mount", "--propagation", "private", "--", "bash", "-c", MOUNT_SCRIPT]
    return mounts + ["mount-and-run", str(root), str(wheels or ""), *inside]


def gradescope_run(root, mode, notebooks, cpu):
    """One submission through /autograder/run_autograder: (results.json, CPU-s, wall s, log)."""
    from grade_vs_nbgrader import CpuMeter

    autograder = Path(root) / "autograder"
    for name in ("submission", "results"):
        shutil.rmtree(autograder / name, ignore_errors=True)
        (autograder / name).mkdir()
    for path in notebooks:
        shutil.copy2(path, autograder / "submission" / path.name)
    metadata = {"id": 1, "users": [{"email": EMAIL, "id": 7, "name": "Field Test"}]}
    (autograder / "submission_metadata.json").write_text(json.dumps(metadata))
    inner = ["bash", "-c", "cd /autograder && exec /autograder/run_autograder"]
    started = time.perf_counter()
    with CpuMeter() as meter:
        with subprocess.Popen(
            chroot_command(root, mode, inner, cpu=cpu),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ) as proc:
            with ProcessWatch(proc.pid) as watch:
                log = proc.communicate()[0]
    wall = time.perf_counter() - started
    try:
        results = json.loads((autograder / "results" / "results.json").read_text())
    except (OSError, ValueError):
        results = None
    ok, proof = evidence(mode, log, list(watch.seen.values()))
    log += f"\n[field test] {proof}\n"
    return results, meter.seconds, wall, log, meter.method, (ok, proof)


def standalone_run(notebooks, cpu):
    """The same submission through `python -m autograder grade`, pinned to the same CPU."""
    from grade_vs_nbgrader import CpuMeter

    base = Path(tempfile.mkdtemp(prefix="field-standalone-"))
    try:
        student = base / "class" / EMAIL
        student.mkdir(parents=True)
        for path in notebooks:
            shutil.copy2(path, student / path.name)
        command = ["taskset", "-c", str(cpu), sys.executable, "-m", "autograder", "grade"]
        command += [str(student), "--out", str(base / "out"), "--secret", SECRET]
        command += ["--workers", "1", "--force", "--quiet"]
        env = {k: v for k, v in os.environ.items() if k != "COURSE_SECRET"}
        started = time.perf_counter()
        with CpuMeter() as meter:
            with subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                env=env,
                cwd=REPO,
            ) as proc:
                with ProcessWatch(proc.pid) as watch:
                    log = proc.communicate()[0]
        wall = time.perf_counter() - started
        try:
            results = json.loads((base / "out" / EMAIL / "results.json").read_text())
        except (OSError, ValueError):
            results = None
        seen, uids = observed_sandbox(list(watch.seen.values()))  # shown, not checked
        proof = f"seen: {seen}, uids {','.join(map(str, uids)) or '-'}"
        return results, meter.seconds, wall, log, meter.method, (True, proof)
    finally:
        shutil.rmtree(base, ignore_errors=True)


# -- the table -----------------------------------------------------------------------------------
def score_of(results):
    """The score as "88.5/88.5" from a results.json (either schema), "no results.json" without one."""
    if not results:
        return "no results.json"
    tests = results.get("tests", [])
    max_score = results.get("max_score")
    if max_score is None:
        max_score = (results.get("extra_data") or {}).get("max_score")
    if max_score is None:
        max_score = sum(t.get("max_score", 0) for t in tests)
    return f"{results.get('score', 0):g}/{max_score:g}"


def _full(score):
    """ "126.25/126.25" (every run, if several) -> True."""
    parts = [part.split("/") for part in score.split(" or ")]
    return all(len(p) == 2 and float(p[0]) == float(p[1]) > 0 for p in parts)


def _zero(score):
    parts = [part.split("/") for part in score.split(" or ")]
    return all(len(p) == 2 and float(p[0]) == 0 for p in parts)


def table(rows, submissions=tuple(SUBMISSIONS)):
    """rows: [{"image", "mode", "scores": {submission: "x/y"}, "cpu": {submission: seconds}}]
    -> the field test's table as text, one line per (image, mode)."""
    head = ["image", "sandbox mode", *submissions, "CPU-s per submission"]
    evidence = any(row.get("evidence") for row in rows)
    if evidence:
        head.append("evidence (the run's log; its processes, as the kernel saw them)")
    lines = []
    for row in rows:
        cpu = [row["cpu"][s] for s in submissions if row["cpu"].get(s) is not None]
        mean = f"{sum(cpu) / len(cpu):.1f}" if cpu else "-"
        each = " / ".join(f"{row['cpu'][s]:.1f}" for s in submissions if s in row["cpu"])
        lines.append(
            [row["image"], row["mode"], *(row["scores"].get(s, "-") for s in submissions)]
            + [f"{mean} ({each})" if each else mean]
        )
        if evidence:
            proofs = row.get("evidence") or {}
            distinct = list(dict.fromkeys(proofs.values()))
            lines[-1].append(
                distinct[0] + (" (every submission)" if len(proofs) > 1 else "")
                if len(distinct) == 1
                else "; ".join(f"{s}: {proofs[s]}" for s in submissions if s in proofs)
            )
    widths = [max(len(str(x)) for x in column) for column in zip(head, *lines, strict=True)]

    def fmt(cells):
        return "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([fmt(head), rule, *(fmt(cells) for cells in lines)])


def grade(args):
    """Every (mode, submission) `args.runs` times, interleaved: run r of each mode and of the
    standalone grader back to back, so a change in the machine's load touches all alike."""
    plans = [(args.image, mode) for mode in args.modes]
    if not args.no_standalone:
        plans.append(("this machine, standalone", "grade --workers 1"))
    seen = {plan: {} for plan in plans}  # plan -> submission -> [(score, cpu, wall)]
    proofs = {plan: {} for plan in plans}  # plan -> submission -> {evidence line}
    mismatches = 0
    for name in args.submissions:
        notebooks = sorted(SUBMISSIONS[name].glob("*.ipynb"))
        for _ in range(args.runs):
            for image, mode in plans:
                if mode == "grade --workers 1":
                    results, cpu, wall, log, method, (ok, proof) = standalone_run(
                        notebooks, args.cpu
                    )
                else:
                    results, cpu, wall, log, method, (ok, proof) = gradescope_run(
                        args.root, mode, notebooks, args.cpu
                    )
                mismatches += not ok
                seen[(image, mode)].setdefault(name, []).append(
                    (score_of(results), round(cpu, 2), round(wall, 1), method)
                )
                proofs[(image, mode)].setdefault(name, set()).add(proof)
                print(
                    f"{image} | {mode} | {name}: {score_of(results)}, {cpu:.1f} CPU-s, "
                    f"{wall:.0f} s wall ({method}); {proof}",
                    flush=True,
                )
                if args.logs:
                    folder = Path(args.logs)
                    folder.mkdir(parents=True, exist_ok=True)
                    safe = f"{mode}-{name}".replace(" ", "_")
                    (folder / f"{safe}.log").write_text(log)
                    (folder / f"{safe}.results.json").write_text(json.dumps(results, indent=1))
    rows = []
    for (image, mode), runs in seen.items():
        row = {"image": image, "mode": mode, "scores": {}, "cpu": {}, "wall": {}, "cpu_runs": {}}
        for name, done in runs.items():
            # a score that differs between runs is a finding: the table shows every one
            row["scores"][name] = " or ".join(sorted({score for score, *_ in done}))
            row["cpu_runs"][name] = [cpu for _, cpu, _, _ in done]
            row["cpu"][name] = statistics.median(row["cpu_runs"][name])
            row["wall"][name] = statistics.median(wall for _, _, wall, _ in done)
            row["cpu_method"] = done[-1][3]
            row.setdefault("evidence", {})[name] = " or ".join(sorted(proofs[(image, mode)][name]))
        rows.append(row)
    print()
    print(table(rows, tuple(args.submissions)))
    wrong = [  # the field test's own verdict: solutions full marks, blank 0, in every row
        f"{row['image']} | {row['mode']} | {name}: {score}"
        for row in rows
        for name, score in row["scores"].items()
        if (name == "solutions" and not _full(score)) or (name == "blank" and not _zero(score))
    ]
    for line in wrong:
        print(f"WRONG SCORE: {line} (solutions must score full marks, blank 0)")
    mismatches += len(wrong)
    if mismatches:
        print(f"{mismatches} finding(s): MISMATCH or WRONG SCORE above")
    print(json.dumps(rows))
    return 1 if mismatches else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cmd = commands.add_parser("grade", help="grade in ROOT in each mode; print the table")
    cmd.add_argument("--root", required=True, help="the chroot (its /autograder is set up)")
    cmd.add_argument("--image", default="Debian 12", help="what the table calls the root")
    cmd.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    cmd.add_argument("--submissions", nargs="+", default=list(SUBMISSIONS), choices=SUBMISSIONS)
    cmd.add_argument("--cpu", default="0", help="the one CPU everything is pinned to")
    cmd.add_argument("--runs", type=int, default=1, help="runs of each; the table: medians")
    cmd.add_argument("--no-standalone", action="store_true", help="skip the standalone rows")
    cmd.add_argument("--logs", help="keep each run's log and results.json in this folder")
    cmd = commands.add_parser("confine", help="exec ARGV as a container in MODE would")
    cmd.add_argument("--mode", required=True, choices=MODES)
    cmd.add_argument("argv", nargs=argparse.REMAINDER)
    cmd = commands.add_parser("chroot", help="run ARGV as root in ROOT, mounted like a container")
    cmd.add_argument("--root", required=True)
    cmd.add_argument("--mode", default="userns", choices=MODES)
    cmd.add_argument("--wheels", help="a folder of wheels to mount at /opt/wheels (read-only)")
    cmd.add_argument("--env", action="append", default=[], help="NAME=value for ARGV")
    cmd.add_argument("argv", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.command in ("confine", "chroot"):
        inner = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        if args.command == "confine":
            return confine(args.mode, inner)
        command = chroot_command(args.root, args.mode, inner, wheels=args.wheels, env=args.env)
        return subprocess.run(command).returncode
    return grade(args)


if __name__ == "__main__":
    sys.exit(main())
