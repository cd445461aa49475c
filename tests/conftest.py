"""Shared helpers: realistic skill folders and fixtures written to temporary directories."""

from __future__ import annotations

import contextlib
import copy
import http.server
import importlib
import importlib.metadata
import json
import os
import pkgutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pytest_agentic_evals

# The console script under test is the one installed next to this interpreter, also when the
# virtualenv is not activated (fixtures that run `agentic-evals` find it on PATH).
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])

# Most of the suite's time is child Pythons: pytester subprocesses, the CLI, xdist workers, the
# programs under test. With PYTHONDONTWRITEBYTECODE (set by some shells and CI images) each of
# them compiled the package afresh. They keep their bytecode instead, out of the tree, so a
# checkout stays free of __pycache__ (tests copy and walk it) and a read-only checkout still
# caches. Set here, before xdist starts its workers, so that every child inherits it.
# The prefix is in the virtualenv when there is one: a sandboxed trial sees it (read-only) and
# so finds the bytecode its Pythons need (`agentic-evals` in a trial, a skill's script); under
# the temporary directory, which trials never see, each of them compiled everything it
# imported, the standard library too (about half a second a start).
def _bytecode_prefix() -> str:
    if sys.prefix != sys.base_prefix and os.access(sys.prefix, os.W_OK):
        return os.path.join(sys.prefix, "bytecode")
    return os.path.join(tempfile.gettempdir(), f"pytest-agentic-evals-bytecode-{os.getuid()}")


os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault("PYTHONPYCACHEPREFIX", _bytecode_prefix())
sys.dont_write_bytecode = False
sys.pycache_prefix = os.environ["PYTHONPYCACHEPREFIX"]

# The key that seals probe results (pytest_agentic_evals.seals) is the tests' own, not one in
# the home directory of whoever runs them.
os.environ["XDG_STATE_HOME"] = os.path.join(tempfile.gettempdir(),
                                            f"pytest-agentic-evals-state-{os.getuid()}")

# An inner session run in this process (pytester's runpytest) puts sys.modules back, at its
# end, as it was when the test started: every module it imported is imported again, compiled
# code and all, by the next one (a tenth of a second or more for each session). Imported here,
# the package's modules and the installed pytest plugins are kept between inner sessions, as
# they are in one long-lived pytest process.
for _module in pkgutil.walk_packages(pytest_agentic_evals.__path__, "pytest_agentic_evals."):
    if not _module.name.endswith(".__main__"):
        importlib.import_module(_module.name)
for _plugin in importlib.metadata.entry_points(group="pytest11"):
    importlib.import_module(_plugin.module)

# Inner pytest sessions need none of hypothesis's plugin (its import is a good part of a
# child's start-up); pytester clears PYTEST_ADDOPTS, so the pytester fixture below sets it.
INNER_ADDOPTS = "-p no:hypothesispytest"

RUN_SH = """#!/usr/bin/env bash
# A small skill: greets a name, refuses an empty one.
if [ -z "${1:-}" ]; then echo "error: name required" >&2; exit 2; fi
echo "hello, $1"
"""


def skill_fixture(**overrides: Any) -> dict[str, Any]:
    """A fixture that keeps the anti-slush contract, for a skill whose run.sh greets."""
    data: dict[str, Any] = {
        "version": 2,
        "skill": "greeter",
        "trials": 2,
        "cases": [
            {
                "name": "greets",
                "type": "positive",
                "real_world": True,
                "command": ["bash", "../run.sh", "Ada"],
                "expected": {"exit_code": 0, "stdout_contains": ["hello, Ada"]},
            },
            {
                "name": "refuses-empty-name",
                "type": "negative",
                "command": ["bash", "../run.sh", ""],
                "expected": {"exit_code": 2, "stderr_contains": ["name required"]},
            },
        ],
    }
    data.update(overrides)
    return data


class Skill:
    """A skill folder with run.sh and fixtures/agentic_eval.json."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.fixtures = root / "fixtures"
        self.fixtures.mkdir(parents=True, exist_ok=True)
        run = root / "run.sh"
        run.write_text(RUN_SH)
        run.chmod(run.stat().st_mode | stat.S_IXUSR)
        (root / "SKILL.md").write_text("---\nname: greeter\ndescription: greets\n---\n")

    def write(self, data: Any, name: str = "agentic_eval.json") -> Path:
        path = self.fixtures / name
        text = data if isinstance(data, str) else json.dumps(data, indent=2)
        path.write_text(text)
        return path

    def fixture(self, **overrides: Any) -> Path:
        return self.write(skill_fixture(**overrides))


@pytest.fixture
def skill(tmp_path: Path) -> Skill:
    return Skill(tmp_path / "greeter")


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester's own fixture, its inner sessions (in process and in a subprocess) started
    without plugins none of them uses."""
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)
    return pytester


@pytest.fixture
def tmpdir_of_its_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A $TMPDIR for this test alone, for this process and the ones it starts."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return tmp


def with_failing_optional_case() -> dict[str, Any]:
    """The greeter's fixture with an optional case that fails every trial: shown, and a READY
    fixture stays READY."""
    data = skill_fixture()
    data["cases"].append({"name": "greets-in-french", "type": "positive", "required": False,
                          "command": ["bash", "../run.sh", "Ada"],
                          "expected": {"exit_code": 0, "stdout_contains": ["bonjour, Ada"]}})
    return data


@pytest.fixture
def fixture_data() -> dict[str, Any]:
    return copy.deepcopy(skill_fixture())


def child_env() -> dict[str, str]:
    """The environment of a program a test starts, as a user's shell would give it: without
    the variables of this pytest session (PYTEST_CURRENT_TEST, xdist's, pytester's), and with
    the pytest sessions it starts spared hypothesis's plugin, as pytester's are."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    return env


def run_console_script(
    *args: str, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """The real ``agentic-evals`` console script in a process of its own, as a user runs it:
    for the end-to-end tests of the command itself (its entry point, its exit status as the
    shell sees it, what reaches a pipe)."""
    executable = Path(sys.executable).parent / "agentic-evals"
    return subprocess.run(
        [str(executable), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
        stdin=subprocess.DEVNULL, env=child_env(),
    )


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``agentic-evals`` called in this process, as its console script calls it.

    The dispatcher, the command and every program it starts (the pytest session of ``run``,
    proof commands, trials) are the real ones; only the start of an interpreter is saved.
    What the command prints is captured at the file descriptors, so the output of the programs
    it starts is in it too, in order, as with the console script. The command sees the
    environment, working directory and standard input the console script would see, and the
    process's environment, directory and signal dispositions are restored afterwards. An
    exception the command lets out ends it as it ends the console script: a traceback on
    stderr and status 1.
    """
    from pytest_agentic_evals.cli.main import main

    with _in_process_command(cwd) as (stdout_file, stderr_file):
        try:
            status: Any = main(list(args))
        except SystemExit as exc:
            status = exc.code
        except Exception:  # as the console script ends: a traceback and status 1
            traceback.print_exc()
            status = 1
        sys.stdout.flush()
        sys.stderr.flush()
        if status is None:
            status = 0
        elif not isinstance(status, int):  # sys.exit("message"): on stderr, status 1
            print(status, file=sys.stderr, flush=True)
            status = 1
        stdout_file.seek(0)
        stderr_file.seek(0)
        stdout, stderr = stdout_file.read(), stderr_file.read()
    return subprocess.CompletedProcess(["agentic-evals", *args], status, stdout.decode(),
                                       stderr.decode(errors="backslashreplace"))


@contextlib.contextmanager
def _in_process_command(cwd: Path | None) -> Iterator[tuple[Any, Any]]:
    """Standard streams on fresh files (stdin on /dev/null), the environment of
    ``child_env()``, ``cwd`` as the working directory; all of it put back on leaving."""
    saved_environ = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    saved_handlers = {signum: signal.getsignal(signum)
                      for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    saved_mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    saved_fds = [os.dup(fd) for fd in (0, 1, 2)]
    with tempfile.TemporaryFile() as stdout_file, tempfile.TemporaryFile() as stderr_file:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            with open(os.devnull, "rb") as devnull:
                os.dup2(devnull.fileno(), 0)
            os.dup2(stdout_file.fileno(), 1)
            os.dup2(stderr_file.fileno(), 2)
            sys.stdin = open(0, closefd=False, encoding="utf-8")  # noqa: SIM115
            sys.stdout = open(1, "w", closefd=False, encoding="utf-8")  # noqa: SIM115
            sys.stderr = open(2, "w", closefd=False, encoding="utf-8",  # noqa: SIM115
                              errors="backslashreplace", buffering=1)
            environ = child_env()
            os.environ.clear()
            os.environ.update(environ)
            if cwd is not None:
                os.chdir(cwd)
            yield stdout_file, stderr_file
        finally:
            opened = sys.stdin, sys.stdout, sys.stderr
            for stream in opened:
                with contextlib.suppress(OSError, ValueError):
                    stream.close()  # flushes; the descriptor stays open (closefd=False)
            sys.stdin, sys.stdout, sys.stderr = saved_streams
            for fd, saved in enumerate(saved_fds):
                os.dup2(saved, fd)
                os.close(saved)
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_environ)
            for signum, handler in saved_handlers.items():
                signal.signal(signum, handler)
            signal.pthread_sigmask(signal.SIG_SETMASK, saved_mask)


def interruptible() -> None:
    """Give a child the default Ctrl-C, SIGTERM and SIGHUP, as a terminal's foreground job has.

    For ``preexec_fn``: a job started in the background by a non-interactive shell (a CI
    script, ``nohup ... &``) inherits SIGINT (and under nohup SIGHUP) ignored, and so would the
    program under test, which rightly leaves an ignored signal ignored.
    """
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)


def pid_alive(pid: int) -> bool:
    """True when the process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state != "Z"


# Every verdict must be the same in a serial run and under xdist.
MODES = [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist")]


def make_skill(pytester: pytest.Pytester, data: Any, name: str = "agentic_eval.json") -> Path:
    """A skill folder at the pytester root, with the fixture in fixtures/NAME."""
    root = pytester.path
    (root / "run.sh").write_text(RUN_SH)
    (root / "run.sh").chmod(0o755)
    fixtures = root / "fixtures"
    fixtures.mkdir(exist_ok=True)
    path = fixtures / name
    path.write_text(data if isinstance(data, str) else json.dumps(data, indent=2))
    return path


def json_slots(node: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) of a JSON document."""
    found: list[tuple[Any, Any]] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) \
        if isinstance(node, list) else ()
    for key, child in items:
        found.append((node, key))
        found += json_slots(child)
    return found


def mutate_json(draw: Any, document: Any, scalars: Any, keys: Any) -> Any:
    """One to three random edits of ``document`` (in place): a value replaced by one of
    ``scalars``, a slot deleted, or an entry added (a key from ``keys`` in an object). For
    checks that a fast validator never accepts what its schema refuses."""
    from hypothesis import strategies as st

    for _ in range(draw(st.integers(1, 3))):
        container, key = draw(st.sampled_from(json_slots(document)))
        operation = draw(st.sampled_from(["replace", "delete", "add"]))
        if operation == "replace":
            container[key] = copy.deepcopy(draw(scalars))
        elif operation == "delete":
            del container[key]
        elif isinstance(container, dict):
            container[draw(keys)] = copy.deepcopy(draw(scalars))
        else:
            container.append(copy.deepcopy(draw(scalars)))
    return document


def marker() -> str:
    """A sleep duration no other process on the machine has on its command line."""
    return f"{300 + uuid.uuid4().int % 10_000}.{uuid.uuid4().int % 1_000_000:06d}"


def alive_with(text: str) -> list[int]:
    """Live processes of the host whose command line contains ``text``.

    A process is alive while any of its threads runs: its leader thread can end alone (then
    /proc shows the process as a zombie, with no command line) while another runs on, so each
    thread is looked at, and the command line read through a running one.
    """
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        for directory in running_threads(int(name)):
            try:
                command = (directory / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except (OSError, UnicodeDecodeError):
                continue
            if text in command:
                found.append(int(name))
                break
    return found


def running_threads(pid: int) -> list[Path]:
    """The /proc directories of the threads of ``pid`` that have not exited."""
    running = []
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    for thread in threads:
        directory = Path(f"/proc/{pid}/task/{thread}")
        try:
            state = (directory / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            running.append(directory)
    return running


# A process that escapes by moving: it leaves its session, then forks and exits in a loop, a new
# pid every few milliseconds. Arguments: anything (a marker).
HOPPER = """
import os, sys, time
if os.fork():
    os._exit(0)
os.setsid()
while True:  # a new pid every few milliseconds, none of them for long
    if os.fork():
        os._exit(0)
    time.sleep(0.002)
"""


def hoppers_seen(marker: str, seconds: float) -> set[int]:
    """The process groups of processes with ``marker`` in their command line, watched for
    ``seconds``: a process that changes its pid every few milliseconds is rarely caught in a
    listing of /proc, but each of its pids is seen if every pid is looked at as it is handed
    out (other processes of the machine take pids too).  Each one seen is killed with its
    group."""
    groups = set()
    seen_up_to = last_pid() - 64
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        last = last_pid()
        for pid in range(max(seen_up_to, last - 100_000) + 1, last + 1):
            with contextlib.suppress(OSError):
                if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                    group = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2]
                                .split()[2])
                    groups.add(group)
                    with contextlib.suppress(OSError):
                        os.killpg(group, signal.SIGKILL)
        seen_up_to = last
    return groups


def last_pid() -> int:
    return int(Path("/proc/loadavg").read_text().split()[-1])


@contextlib.contextmanager
def pid_churn(processes: int = 3) -> Iterator[None]:
    """Other processes of the machine forking all the time, as on a busy CI machine: the pids
    handed out next to a trial's are not its own."""
    churners = [subprocess.Popen(["sh", "-c", "while :; do /bin/true; done"],
                                 start_new_session=True) for _ in range(processes)]
    try:
        yield
    finally:
        for churner in churners:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(churner.pid, signal.SIGKILL)
            churner.wait()


# A process that outlives its leader thread: the leader ends with the exit system call (not
# exit_group, which ends every thread), and /proc shows the process as a zombie while its
# other thread runs on. Arguments: seconds for the thread to live, then anything (a marker).
LEADER_EXITS_ALONE = (
    "import ctypes, platform, sys, threading, time\n"
    "threading.Thread(target=time.sleep, args=(float(sys.argv[1]),)).start()\n"
    "ctypes.CDLL(None).syscall(dict(x86_64=60, aarch64=93)[platform.machine()], 0)\n"
)


class _Hello(http.server.BaseHTTPRequestHandler):
    """Says which Host and path it was asked for, so a test sees where a request landed."""

    def do_GET(self) -> None:
        body = f"hello from {self.headers.get('Host', '?').split(':')[0]} {self.path}\n".encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep the test output clean


@contextlib.contextmanager
def serving(server: http.server.HTTPServer) -> Iterator[int]:
    """``server`` answering in a thread of its own, for the test's duration; its port."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def hello_origin() -> contextlib.AbstractContextManager[int]:
    """An HTTP server on a free loopback port (yielded) that answers every GET with hello."""
    return serving(http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Hello))
