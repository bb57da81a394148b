"""The notebook's kernel as a bare IPython shell (zygote._shell) and the driver's side of it
(driver.LightClient), outside any sandbox: a shell forked from this process answers the client
over a socket pair, as the zygote's child answers the driver.

What the grader relies on: an error reaches the cell with its name and message; prints are
counted, never kept; the driver's own cells return their result's text; a cell that runs past its
wall-clock allowance raises CellTimeoutError, and its late answer is never taken for the next
cell's; an interrupt stops a cell with KeyboardInterrupt and the shell goes on; a shell that dies
raises DeadKernelError.
"""

import os
import signal
import socket
import threading
import time

import pytest

from autograder.sandbox.inside import zygote
from autograder.sandbox.inside.driver import (
    CellTimeoutError,
    DeadKernelError,
    LightClient,
    new_code_cell,
)


@pytest.fixture
def client():
    ours, theirs = socket.socketpair()
    pid = os.fork()
    if pid == 0:  # the zygote's child, reduced to the shell
        code = 1
        try:
            ours.close()
            os.setsid()
            signal.signal(signal.SIGINT, signal.default_int_handler)
            code = zygote._shell(theirs.detach())
        finally:
            os._exit(code)
    theirs.close()
    light = LightClient({"cells": []}, timeout=30, preload="", startup_timeout=30)
    light.pid, light.channel = pid, ours
    yield light
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
    os.waitpid(pid, 0)
    ours.close()


def run(light, source, timeout=30):
    cell = new_code_cell(source)
    light.timeout = timeout
    light.execute_cell(cell, 0)
    return cell


def test_errors_prints_and_results_reach_the_driver_as_the_notebook_client_gave_them(client):
    assert run(client, "x = 6 * 7").outputs == []
    [error] = run(client, "1 / 0").outputs
    assert (error.output_type, error.ename, error.evalue) == (
        "error",
        "ZeroDivisionError",
        "division by zero",
    )
    [error] = run(client, "def broken(:\n    pass").outputs
    assert error.ename == "SyntaxError"
    before = client.printed
    assert run(client, "print('a' * 1000)").outputs == []
    assert client.printed - before >= 1000  # counted, and nothing of it kept in the cell
    client.captured = []
    run(client, "x")  # the driver's own cells ask for their result
    assert client.captured == ["42"]


def test_a_late_answer_is_never_taken_for_the_next_cells(client):
    with pytest.raises(CellTimeoutError):
        run(client, "import time\ntime.sleep(2)\ny = 'late'\ny", timeout=0.5)
    client.captured = []
    run(client, "z = 'next'\nz", timeout=30)  # answered after the late one
    assert client.captured == ["'next'"]


def test_an_interrupt_stops_the_cell_and_the_shell_goes_on(client):
    cell = new_code_cell("while True:\n    pass")
    client.timeout = 30
    started = time.monotonic()

    def interrupt_soon():
        time.sleep(0.5)
        client.interrupt_kernel()

    threading.Thread(target=interrupt_soon, daemon=True).start()
    client.execute_cell(cell, 0)
    assert [o.ename for o in cell.outputs] == ["KeyboardInterrupt"]
    assert time.monotonic() - started < 25
    client.interrupt_kernel()  # between cells: nothing to stop, and nothing breaks
    time.sleep(0.2)
    client.captured = []
    run(client, "'alive'")
    assert client.captured == ["'alive'"]


def test_a_shell_that_dies_is_a_dead_kernel(client):
    with pytest.raises(DeadKernelError):
        run(client, "import os\nos._exit(3)")


def test_a_forged_answer_from_the_students_code_is_not_taken_for_the_cells(client):
    """The student's code holds the shell's socket: what it writes there is at most a wrong
    count or a garbled line, never the driver's crash, and the cell's own answer still comes."""
    forge = (
        "import os, socket\n"
        "fd = [f for f in range(3, 64) if os.path.exists(f'/proc/self/fd/{f}')\n"
        "      and os.readlink(f'/proc/self/fd/{f}').startswith('socket:')][0]\n"
        "os.write(fd, b'[' * 100000 + b'\\n')\n"
        "os.write(fd, b'not json\\n')\n"
        'os.write(fd, b\'{"id": 999, "ename": "Forged"}\\n\')'
    )
    cell = run(client, forge)
    assert [o.ename for o in cell.outputs] in ([], ["Forged"])  # never a crash of the driver
    client.captured = []
    run(client, "'after'")
    assert client.captured == ["'after'"]


def test_the_driver_reads_a_notebook_as_nbformat_does(tmp_path):
    """The bare shell's path reads the parent's notebook without nbformat: the same cells, each
    source one string (nbformat writes it as a list of lines), the same attributes."""
    import nbformat

    from autograder.sandbox.inside.driver import read_notebook

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A title\nand a line"),
        nbformat.v4.new_code_cell("x = 1\n\nprint('é', x)\n"),
        nbformat.v4.new_code_cell(""),
    ]
    nb.cells[1].metadata["tags"] = ["demo"]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    assert '"x = 1\\n",' in path.read_text(encoding="utf-8")  # written as a list of lines
    ours, theirs = read_notebook(path), nbformat.read(path, as_version=4)
    assert ours == theirs
    assert [c.source for c in ours.cells] == [c.source for c in theirs.cells]
    assert ours.cells[1].metadata.tags == ["demo"]
    with pytest.raises(AttributeError):
        ours.cells[0].outputs  # noqa: B018 - a markdown cell has none, as in nbformat
