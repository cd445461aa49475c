"""A trial's stdout and stderr are pipes the runner copies into files: what a command printed
stays printed, whatever it does to its output afterwards."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_agentic_evals.execution.capture import HELD_OPEN_SECONDS
from pytest_agentic_evals.execution.process import PROCESS_TAG_VARIABLE, run_process

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


def test_a_process_that_escaped_and_holds_the_output_is_cut_off_and_named(
        tmp_path: Path) -> None:
    """Without the sandbox, a process with neither the trial's tag nor its group (``env -i
    setsid``) outlives the trial unseen; holding the output open, it is seen now, and the
    runner does not wait for it."""
    started = time.monotonic()
    # Once it is sleep, it has dropped the tag (until then the sweep would find it).
    escape = ('env -i setsid sleep 60 & '
              'until [ "$(cat /proc/$!/comm)" = sleep ]; do sleep 0.01; done; echo $!')
    stdout, problem = run(["sh", "-c", escape], tmp_path)
    pid = int(stdout.split()[0])
    try:
        assert time.monotonic() - started < HELD_OPEN_SECONDS + 10
        assert problem is not None
        assert problem.startswith("a process the runner could not find kept the trial's "
                                  "output open after the trial ended")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


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
