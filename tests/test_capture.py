"""A trial's stdout and stderr are pipes the runner copies into files: what a command printed
stays printed, whatever it does to its output afterwards."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pytest_agentic_evals.execution.capture import Capture
from pytest_agentic_evals.execution.process import PROCESS_TAG_VARIABLE, run_process

from conftest import HOPPER, hoppers_seen, pid_churn

ERASERS = {
    "ftruncate": "import os; os.write(1, b'SECRET\\n'); os.ftruncate(1, 0); os.write(1, b'ok\\n')",
    "reopen-truncating": "import os; os.write(1, b'SECRET\\n'); open('/proc/self/fd/1', 'w')",
    "seek-and-overwrite": "import os; os.write(1, b'SECRET\\n'); os.lseek(1, 0, 0); "
                          "os.write(1, b'XXXXXX\\n')",
    "grow-over-it": "import os; os.write(1, b'SECRET\\n'); os.truncate('/proc/self/fd/1', 1 << 40)",
}


def run(argv: list[str], tmp_path: Path, timeout: float = 60) -> tuple[bytes, str | None]:
    env = {k: v for k, v in os.environ.items() if k != PROCESS_TAG_VARIABLE}
    result = run_process(argv, cwd=tmp_path, env=env, timeout=timeout,
                         output_dir=tmp_path / "output")
    return result.stdout_path.read_bytes(), result.integrity_error


@pytest.mark.parametrize("script", ERASERS.values(), ids=ERASERS.keys())
def test_a_command_cannot_rewrite_what_it_printed(tmp_path: Path, script: str) -> None:
    stdout, problem = run([sys.executable, "-c", script], tmp_path)
    assert stdout.startswith(b"SECRET\n"), stdout[:100]
    assert len(stdout) < 100 and problem is None


def test_a_process_that_escaped_and_holds_the_output_is_found_and_killed(
        tmp_path: Path) -> None:
    """Without the sandbox, a process with neither the trial's tag nor its group (``env -i
    setsid``) outlived the trial unseen; holding the output open, it is found by the pipe it
    holds, killed, and named as left behind."""
    # Once it is sleep, it has dropped the tag (until then the tag sweep would find it).
    escape = ('env -i setsid sleep 60 & '
              'until [ "$(cat /proc/$!/comm)" = sleep ]; do sleep 0.01; done; echo $!')
    env = {k: v for k, v in os.environ.items() if k != PROCESS_TAG_VARIABLE}
    result = run_process(["sh", "-c", escape], cwd=tmp_path, env=env, timeout=60,
                         output_dir=tmp_path / "output")
    pid = int(result.stdout_path.read_text())
    try:
        assert [(p.pid, p.command) for p in result.left_behind] == [(pid, "sleep 60")]
        assert result.integrity_error is None
        assert not Path(f"/proc/{pid}").exists() or _state(pid) == "Z"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def test_a_process_hopping_between_pids_that_holds_the_output_is_found_and_killed(
        tmp_path: Path) -> None:
    """One that escaped as above and then forks and exits in a loop (a new pid every few
    milliseconds) is killed with its group: nothing of it lives on."""
    marker = f"hopper-{uuid.uuid4().hex}"
    env = {k: v for k, v in os.environ.items() if k != PROCESS_TAG_VARIABLE}
    with pid_churn():  # other processes take the pids next to the hopper's
        result = run_process(["sh", "-c", f"env -i {sys.executable} -c '{HOPPER}' {marker}"],
                             cwd=tmp_path, env=env, timeout=60, output_dir=tmp_path / "output")
        survivors = hoppers_seen(marker, 0.5)
    assert result.left_behind, result.integrity_error
    assert result.integrity_error is None
    assert survivors == set()


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def test_output_still_held_when_the_trial_is_over_is_cut_off_and_said(tmp_path: Path) -> None:
    """A holder the runner cannot find or end (another user's process, say) cannot make it
    wait: the copy stops, what came before is kept, and the trial is told."""
    capture = Capture(tmp_path / "stdout", tmp_path / "stderr")
    holder = subprocess.Popen(["sh", "-c", "echo before; exec sleep 60"],
                              stdout=capture.stdout, stderr=capture.stderr)
    capture.start()
    try:
        started = time.monotonic()
        capture.close(0.2)
        assert time.monotonic() - started < 5
    finally:
        holder.kill()
        holder.wait()
    assert capture.problem == ("a process the runner could not find kept the trial's output "
                               "open after the trial ended; what it wrote afterwards was not "
                               "kept")
    assert (tmp_path / "stdout").read_bytes() == b"before\n"


FULL_DISK = """
import os, resource, signal, sys
from pathlib import Path
from pytest_agentic_evals.execution.capture import Capture
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))
capture = Capture(Path("stdout"), Path("stderr"))
os.write(capture.stdout, b"x" * 5000)
os.write(capture.stderr, b"fine")
capture.start()
capture.close()
print(capture.problem)
print(os.path.getsize("stdout"), Path("stderr").read_text())
"""


def test_output_that_cannot_be_kept_is_said_and_the_pipe_still_drained(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", FULL_DISK], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "the trial's output could not be kept: File too large", "1000 fine"]
