"""The parser of the grader's AUTOGRADER_* environment variables: all of them parsed here, by
`switches(environ)`, and nowhere else (tests/architecture/test_switches.py keeps it so). autograder/config.py
hands it the environment, once, and keeps the Switches in the run's Config.

    config.switches.warm_kernels      # a Switches, parsed from the environment at the door

| variable                   | field          | default | meaning                                     |
| -------------------------- | -------------- | ------- | ------------------------------------------- |
| AUTOGRADER_SKIP_SELFTEST   | skip_selftest  | off     | grade without the self-test (emergencies)   |
| AUTOGRADER_SKIP_DEMOS      | skip_demos     | on      | skip the released demonstration cells       |
| AUTOGRADER_WARM_KERNELS    | warm_kernels   | on      | fork kernels from a warm zygote             |
| AUTOGRADER_USERNS          | userns         | on      | a user namespace per sandbox (when root)    |
| AUTOGRADER_CGROUPS         | cgroups        | on      | a cgroup per sandbox                        |
| AUTOGRADER_WORK_DIR        | work_dir       | ""      | the scratch folder of a grading run         |
| AUTOGRADER_SANDBOX         | sandbox        | auto    | Gradescope's sandbox mode (auto/bwrap/none) |
| AUTOGRADER_STUDENT_USER    | student_user   | ""      | Gradescope's unprivileged user ("": default)|

A yes/no switch is read by `flag`: 1/true/yes/on and 0/false/no/off (any case, spaces aside);
unset, empty or anything else is its default. The sandbox's driver never reads the environment
(the sandbox does not carry it): what it needs travels in its job.json.
"""

from collections.abc import Mapping
from dataclasses import dataclass

TRUE = ("1", "true", "yes", "on")
FALSE = ("0", "false", "no", "off")
PREFIX = "AUTOGRADER_"


def flag(value: str | None, default: bool) -> bool:
    """A yes/no switch's value: `default` unless the text says yes or no."""
    text = (value or "").strip().lower()
    if text in TRUE:
        return True
    if text in FALSE:
        return False
    return default


@dataclass(frozen=True)
class Switches:
    skip_selftest: bool = False
    skip_demos: bool = True
    warm_kernels: bool = True
    userns: bool = True
    cgroups: bool = True
    work_dir: str = ""
    sandbox: str = "auto"
    student_user: str = ""
    raw: tuple[
        tuple[str, str], ...
    ] = ()  # (name, text) of every AUTOGRADER_* variable set, for messages and keys

    def text(self, name: str) -> str:
        """The text a variable was set to ("" when unset), e.g. for a warning naming it."""
        return dict(self.raw).get(name, "")


def switches(environ: Mapping[str, str]) -> Switches:
    """Every AUTOGRADER_* switch, parsed from `environ` (autograder/config.py's environment)."""
    raw = tuple(sorted((k, v) for k, v in environ.items() if k.startswith(PREFIX)))
    get = dict(raw).get
    return Switches(
        skip_selftest=flag(get("AUTOGRADER_SKIP_SELFTEST"), False),
        skip_demos=flag(get("AUTOGRADER_SKIP_DEMOS"), True),
        warm_kernels=flag(get("AUTOGRADER_WARM_KERNELS"), True),
        userns=flag(get("AUTOGRADER_USERNS"), True),
        cgroups=flag(get("AUTOGRADER_CGROUPS"), True),
        work_dir=get("AUTOGRADER_WORK_DIR") or "",
        sandbox=get("AUTOGRADER_SANDBOX") or "auto",
        student_user=get("AUTOGRADER_STUDENT_USER") or "",
        raw=raw,
    )
