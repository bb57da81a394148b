"""The Gradescope field test's own logic, cheaply (the test itself needs debootstrap, a network
mirror and minutes: benchmarks/gradescope_field_test.sh, run by hand): the script parses, the
table says what it should, and each sandbox mode takes away what a container would."""

import importlib.util
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "gradescope_field_test.sh"
HELPER = REPO / "benchmarks" / "gradescope_field.py"


def _field():
    spec = importlib.util.spec_from_file_location("gradescope_field", HELPER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_script_parses_and_documents_its_options():
    done = subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    shown = subprocess.run(["bash", str(SCRIPT), "--help"], capture_output=True, text=True)
    assert shown.returncode == 0
    options = ("--suite", "--mirror", "--wheels", "--modes", "--runs", "--python-from-source")
    for option in (*options, "AUTOGRADER_TORCH"):
        assert option in shown.stdout
    refused = subprocess.run(["bash", str(SCRIPT), "--bogus"], capture_output=True, text=True)
    assert refused.returncode == 2 and "unknown option --bogus" in refused.stderr


def test_scores_read_from_either_results_schema():
    field = _field()
    gradescope = {"score": 72.5, "extra_data": {"max_score": 88.5}, "tests": []}
    standalone = {"score": 0.0, "max_score": 88.5, "tests": []}
    only_tests = {"score": 3, "tests": [{"max_score": 2}, {"max_score": 2.5}]}
    assert field.score_of(gradescope) == "72.5/88.5"
    assert field.score_of(standalone) == "0/88.5"
    assert field.score_of(only_tests) == "3/4.5"
    assert field.score_of(None) == "no results.json"


def test_the_table_has_a_row_per_image_and_mode_with_scores_and_cpu():
    field = _field()
    rows = [
        {
            "image": "Debian 12",
            "mode": "userns",
            "scores": {"solutions": "88.5/88.5", "blank": "0/88.5", "mistake": "72.5/88.5"},
            "cpu": {"solutions": 4.0, "blank": 5.0, "mistake": 6.0},
        },
        {
            "image": "this machine, standalone",
            "mode": "grade --workers 1",
            "scores": {"solutions": "no results.json"},
            "cpu": {"solutions": 5.25},
        },
    ]
    lines = field.table(rows).split("\n")
    assert len(lines) == 4 and len({len(line) for line in lines}) == 1  # aligned columns
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    assert cells[0] == ["image", "sandbox mode", "solutions", "blank", "mistake"] + [
        "CPU-s per submission"
    ]
    assert cells[2] == ["Debian 12", "userns", "88.5/88.5", "0/88.5", "72.5/88.5"] + [
        "5.0 (4.0 / 5.0 / 6.0)"
    ]
    assert cells[3][2:] == ["no results.json", "-", "-", "5.2 (5.2)"]


def _allowed(mode, *unshare):
    command = [sys.executable, str(HELPER), "confine", "--mode", mode, "--", "unshare", *unshare]
    return subprocess.run(command + ["true"], capture_output=True, timeout=60).returncode == 0


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="the modes take away what root may do (needs root and unshare)",
)
def test_each_mode_takes_away_what_a_container_would():
    if not _allowed("userns", "--user"):
        pytest.skip("this machine refuses user namespaces even unconfined: nothing to take away")
    assert _allowed("userns", "--mount")
    assert not _allowed("no-userns", "--user") and _allowed("no-userns", "--mount")
    assert not _allowed("no-namespaces", "--user") and not _allowed("no-namespaces", "--mount")


def test_runs_are_interleaved_and_the_table_shows_medians(monkeypatch, capsys):
    """Run r of every mode and of the standalone grader back to back (load drifts touch all
    rows alike); the table shows each row's median CPU-s and every score seen."""
    field = _field()
    calls, cpu = [], iter([3.0, 9.0, 5.0, 1.0, 4.0, 2.0])  # userns, standalone, userns, ...

    def gradescope_run(root, mode, notebooks, at):
        calls.append(mode)
        return {"score": 88.5, "max_score": 88.5}, next(cpu), 1.0, "", "stub", (True, "proof")

    def standalone_run(notebooks, at):
        calls.append("standalone")
        score = 88.5 if len(calls) < 6 else 80  # a score that changed between runs is shown
        return {"score": score, "max_score": 88.5}, next(cpu), 1.0, "", "stub", (True, "")

    monkeypatch.setattr(field, "gradescope_run", gradescope_run)
    monkeypatch.setattr(field, "standalone_run", standalone_run)
    args = ["grade", "--root", "/none", "--modes", "userns", "--submissions", "solutions"]
    assert field.main([*args, "--runs", "3"]) == 1  # solutions short of full marks once
    assert calls == ["userns", "standalone"] * 3
    out = capsys.readouterr().out
    rows = json.loads(out.strip().splitlines()[-1])
    assert [row["cpu"]["solutions"] for row in rows] == [4.0, 2.0]
    assert rows[1]["scores"]["solutions"] == "80/88.5 or 88.5/88.5"
    assert "WRONG SCORE: this machine, standalone | grade --workers 1 | solutions: 80" in out
    assert "WRONG SCORE: Debian 12" not in out


# -- each mode proven by what the run itself says -------------------------------------------------
def _record(process="kernel", uid=0, userns=False, pidns=False, bwrap=False, caps="0" * 16):
    return {
        "process": process,
        "uid": uid,
        "own_userns": userns,
        "own_pidns": pidns,
        "under_bwrap": bwrap,
        "cap_eff": caps,
    }


SANDBOXED = {  # mode -> (run_autograder's line, its notebook processes as /proc shows them)
    "userns": (
        "sandbox: bwrap-userns, uid 1500000000: bubblewrap 0.8.0, ...",
        [
            _record("driver or fork", 1500000000, True, True, True),
            _record("kernel", 1500000001, True, True, True),
        ],
    ),
    "no-userns": (
        "sandbox: bwrap-root, uid 0: bubblewrap 0.8.0 without a user namespace: ...",
        [_record("driver or fork", 0, False, True, True), _record("kernel", 0, False, True, True)],
    ),
    "no-namespaces": (
        "sandbox: student-user, uid 999: no bubblewrap ...",
        [_record("driver or fork", 999), _record("kernel", 999)],
    ),
}


@pytest.mark.parametrize("mode", list(SANDBOXED))
def test_a_mode_is_proven_by_the_runs_log_and_its_processes_together(mode):
    field = _field()
    log, records = SANDBOXED[mode]
    ok, line = field.evidence(mode, "setup\n" + log + "\nada: 88.5 -> results.json", records)
    assert ok, line
    assert line.startswith(f"log: {field.EXPECTED[mode]}, uid ")
    for other in SANDBOXED:  # the same run is no proof of any other mode
        if other != mode:
            assert field.evidence(other, log, records)[1].startswith("MISMATCH: ")


def test_a_log_that_disagrees_with_the_processes_is_a_mismatch():
    field = _field()
    userns_log, userns_seen = SANDBOXED["userns"]
    root_log, root_seen = SANDBOXED["no-userns"]
    assert not field.evidence("userns", userns_log, root_seen)[0]  # logged one, ran another
    assert not field.evidence("no-userns", userns_log, root_seen)[0]
    assert not field.evidence("userns", "", userns_seen)[0]  # nothing logged
    assert not field.evidence("userns", userns_log, [])[0]  # no notebook process seen
    assert not field.evidence("userns", userns_log + "\n" + root_log, userns_seen)[0]
    capable = [_record("kernel", 0, False, True, True, "000001ffffffffff")]
    assert not field.evidence("no-userns", root_log, capable)[0]  # root WITH capabilities
    wrong_user = [_record("kernel", 1000)]
    assert not field.evidence("userns", userns_log, [*userns_seen, _record("kernel", 0)])[0]
    assert not field.evidence("no-namespaces", SANDBOXED["no-namespaces"][0], wrong_user)[0]


def _watched(command, **popen):
    field = _field()
    proc = subprocess.Popen(command, **popen)
    with field.ProcessWatch(proc.pid, interval=0.05) as watch:
        proc.wait(timeout=60)
    return list(watch.seen.values())


SLEEPER = ["sh", "-c", "sleep 1.5; true", "ipykernel"]  # any user may run it (not the venv)
DROPPER = [  # as the driver does: starts as root, then drops to a uid
    sys.executable,
    "-c",
    "import os, time; time.sleep(0.6); os.setresgid(*[65534] * 3); os.setresuid(*[65534] * 3);"
    " time.sleep(1.2)",
    "/opt/grader/driver.py",
]


@pytest.mark.slow  # watches real processes
@pytest.mark.skipif(os.geteuid() != 0, reason="running a process as another uid needs root")
def test_the_watch_sees_a_grandchilds_uid_and_namespaces_from_proc():
    field = _field()
    records = _watched(["sh", "-c", shlex.join(SLEEPER) + "; true"], user=65534)
    assert records and {r["process"] for r in records} == {"kernel"}
    assert {r["uid"] for r in records} == {65534}
    assert field.observed_sandbox(records) == ("student-user", [65534])
    # a process is judged as last seen: the driver is root for a moment, then drops
    records = _watched(DROPPER)
    assert [(r["process"], r["uid"], r["cap_eff"]) for r in records] == [
        ("driver or fork", 65534, "0" * 16)
    ]


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("bwrap") is None, reason="needs root and bubblewrap"
)
def test_the_watch_sees_bubblewrap_and_its_pid_namespace():
    field = _field()
    bwrap = ["bwrap", "--unshare-pid", "--cap-drop", "ALL", "--ro-bind", "/", "/"]
    bwrap += ["--proc", "/proc", "--dev", "/dev", "--"]
    done = subprocess.run([*bwrap, "true"], capture_output=True, timeout=60)
    if done.returncode != 0:
        pytest.skip(f"bubblewrap cannot make a pid namespace here: {done.stderr[-200:]!r}")
    records = _watched([*bwrap, *SLEEPER])
    assert records and all(r["under_bwrap"] and r["own_pidns"] for r in records)
    assert field.observed_sandbox(records) == ("bwrap-root", [0])


def test_solutions_short_of_full_marks_or_a_blank_above_zero_are_wrong_scores():
    field = _field()
    assert field._full("126.25/126.25") and field._full("88.5/88.5 or 88.5/88.5")
    assert not field._full("124/126.25") and not field._full("no results.json")
    assert not field._full("0/0")  # nothing graded is not full marks
    assert field._zero("0/126.25") and not field._zero("0.5/126.25")
    assert not field._zero("no results.json")
