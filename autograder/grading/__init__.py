"""Grading, as steps in order (docs/architecture.md draws them with the data between them).

    run_state.py  RunState: what a run learns as it goes (config.py's Config: what it is told)
    sandboxes.py  the one chooser of the sandbox (bubblewrap, a student user, none), every platform
    workspace.py  OUT's lock, the scratch folder, the run's work folders
    classrun.py   the class run, a list of steps each with its clean-up: lock, work folders,
                  discover, keep the up-to-date, sandbox and self-test, grade each, report
    pool.py       the class run's workers, its progress bar and line
    saved.py      what OUT holds from earlier runs: up to date, kept verdicts, superseded folders
    fingerprint.py  what a verdict was graded under: the secret's hash, course, limits, version
    stopping.py   Ctrl-C, SIGTERM, SIGHUP: the sandboxes killed, the finished kept, exit 128+N
    progress.py   the progress line's notebooks running over their budget
    student.py    one student: plan -> sandbox -> judge -> payload -> late -> one write
    plan.py       NotebookPlan: per notebook, its cases and its sandbox job (or why none)
    payload.py    the results.json payload and its late penalties
    selftest.py   the solutions full marks and a blank 0 in this sandbox, or no grading
    selftest_record.py  the cached pass a later run may believe; the budgets it measured
    selftest_explain.py the sandbox in a line, and the self-test's refusal naming the cause
    course_files.py     the course's files the sandbox is handed (checks stub, coursedata, data)
    command.py    `python -m autograder grade`: the class run and what it prints

The self-test and Gradescope's runner use student.py alone; nothing here imports the platforms.
"""
