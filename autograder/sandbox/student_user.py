"""Where bubblewrap cannot create namespaces (a Gradescope container, say) and the grader is
root: the sandbox's driver, and so the kernels and the student's code, run as an unprivileged
user, with the rlimits and timeouts as usual. grading/sandboxes.py chooses it.

    sandbox = StudentUserSandbox(limits, user="student", course=course_files())
"""

import os
import pwd
import signal
import sys
import warnings
from pathlib import Path
from typing import Any

from . import CourseFiles, Limits, Sandbox
from .copying import share_read_only

STUDENT_USER = "student"  # made by Gradescope's setup.sh; AUTOGRADER_STUDENT_USER names another


class StudentUserSandbox(Sandbox):
    """Where bubblewrap cannot create namespaces: the sandbox's driver, and so the kernels and
    the student's code, run as an unprivileged user (rlimits and timeouts as usual). Its work
    folders are handed to that user; everything else of the grader stays root's."""

    def __init__(
        self,
        limits: Limits | None,
        user: str | int = STUDENT_USER,
        course: CourseFiles | None = None,
        **options: Any,
    ) -> None:
        if isinstance(user, int):  # a bare uid (gid = uid), e.g. one no other process uses
            self.uid = self.gid = user
            name = f"uid {user}"
        else:
            entry = _user(user)
            self.uid, self.gid, name = entry.pw_uid, entry.pw_gid, entry.pw_name
        with warnings.catch_warnings():  # the generic "no filesystem sandbox" warning: see below
            warnings.simplefilter("ignore", RuntimeWarning)
            super().__init__(limits, mode="none", course=course, **options)
        print(
            f"note: bubblewrap cannot create namespaces here; student code runs as the "
            f"unprivileged user {name} (uid {self.uid}), which cannot read the course, "
            "the secret or the results.",
            file=sys.stderr,
        )

    def _launch(self, work, pending, log):
        self.hand_over(Path(work))
        try:
            return super()._launch(work, pending, log)
        finally:
            self.kill_leftovers()

    def kill_leftovers(self) -> None:
        """Without a pid namespace a student's process can leave the process group (setsid):
        kill every process of the student user, as that user (kill(-1) spares the caller)."""
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child only makes system calls
            try:
                os.setgroups([])
                os.setgid(self.gid)
                os.setuid(self.uid)
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            os._exit(0)
        os.waitpid(pid, 0)

    def hand_over(self, work: Path) -> None:
        """The run's folders: writable by the student user; the way to them: traversable only."""
        for name in ("submission", "home", "responses", "status"):
            (work / name).mkdir(parents=True, exist_ok=True)
        (work / "home" / "tmp").mkdir(exist_ok=True)  # TMPDIR without bubblewrap
        for name in ("submission", "home", "responses", "status"):
            for folder, dirs, files in os.walk(work / name, followlinks=False):
                for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
                    os.chown(entry, self.uid, self.gid, follow_symlinks=False)
        share_read_only(work / "requests")
        if (work / "job.json").exists():
            os.chmod(work / "job.json", 0o644)
        for walked in (work, work.parent):  # x only: no listing of the grader's temp folders
            os.chmod(walked, 0o711)

    def _job_file(self, work, pending):
        path = super()._job_file(work, pending)
        os.chmod(path, 0o644)
        return path

    def _preexec(self, cgroup=None, cpu_seconds=None):
        super()._preexec(cgroup, cpu_seconds)  # the cgroup and the rlimits first, while root
        os.setgroups([])
        os.setgid(self.gid)
        os.setuid(self.uid)


def _user(name: str) -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return pwd.getpwnam("nobody")
