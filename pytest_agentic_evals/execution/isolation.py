"""How one trial's command runs: sandboxed when its setting and the machine allow it, else as
before; with its domain proxy; and the ``isolation`` entry of its report.

Kept free of pytest imports, like the process runner.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentic_evals.execution import overlay
from pytest_agentic_evals.execution.confined import Bridge, run_confined
from pytest_agentic_evals.execution.netns import listen_inside
from pytest_agentic_evals.execution.process import ProcessResult, run_process
from pytest_agentic_evals.execution.rundirs import runs_root
from pytest_agentic_evals.execution.sandbox import (
    PROXY_PORT,
    Decision,
    MountPlan,
    SandboxSettings,
    available_bwrap,
    decide,
    missing_writable,
    programs_under,
    runner_installation,
)
from pytest_agentic_evals.expectations.domains import DomainPolicy, unenforced_report
from pytest_agentic_evals.expectations.proxy import DomainProxy, proxy_environment
from pytest_agentic_evals.model import Case
from pytest_agentic_evals.seals import key_directory


@dataclass(frozen=True)
class Place:
    """Where a trial runs, as the sandbox needs to know it."""

    workspace: Path
    cwd: Path
    scratch: Path
    output: Path
    readable: tuple[Path, ...]
    """What must stay visible (read-only) where the sandbox hides its surroundings: the skill
    directory and the working directory."""
    skill_dir: Path
    """The skill directory: read-only even inside a declared writable path (trials that work
    in place have it as their workspace, which is bound writable after it)."""
    layers: overlay.Layers | None = None
    """When set, the workspace is an overlay of the skill directory (sandboxed trials only)."""
    shadowed: tuple[tuple[Path, Path], ...] = ()
    """Files shown in place of others when sandboxed (see ``MountPlan.shadowed``)."""
    hidden: tuple[Path, ...] = ()
    """Files shown empty when sandboxed: the fixture the trial belongs to, wherever the trial
    could read it (see ``workspace.fixture_views``)."""


@dataclass
class Launched:
    """What became of a trial's command."""

    isolation: dict[str, Any]
    process: ProcessResult | None = None
    domains: dict[str, Any] | None = None
    blocked: str | None = None
    """Why the command did not run although it should have (BLOCKED, infrastructure)."""
    failure: str | None = None
    """Why the command did not run: its domain proxy could not start (FAIL, infrastructure)."""


def launch(
    argv: list[str],
    case: Case,
    env: Mapping[str, str],
    timeout: float,
    place: Place,
    settings: SandboxSettings,
) -> Launched:
    """Run a trial's command as its case and the machine allow: sandboxed, or not (and why)."""
    decision = decide(settings, case.sandbox, case.sandbox_source)
    bwrap, reason = _sandbox_for(decision)
    network = case.network if bwrap else "host"
    isolation = {
        "sandbox": "bwrap" if bwrap else "none",
        "setting": decision.mode,
        "network": network,
        "reason": reason,
        "writable_paths": [str(path) for path in case.writable_paths],
    }
    if decision.mode == "required" and bwrap is None:
        return Launched(isolation, blocked=reason)
    kept = _runners_own(case.writable_paths)
    if kept:
        return Launched(isolation, blocked=f"declared writable path(s) inside what the runner "
                                           f"keeps to itself: {', '.join(kept)}")
    missing = missing_writable(case.writable_paths) if bwrap else []
    if missing:
        return Launched(isolation, blocked="declared writable path(s) do not exist: "
                                           + ", ".join(map(str, missing)))
    if bwrap is None and place.layers is not None:
        return Launched(isolation, blocked="an overlay workspace needs the sandbox, and the "
                                           "trial is not sandboxed")
    with _Network(DomainPolicy.from_expected(case.expected), network, bwrap is not None) as net:
        if net.failure is not None:
            return Launched(isolation, domains=net.domains(), failure=net.failure)
        if bwrap is None:
            process = run_process(argv, cwd=place.cwd, env=net.environment(env),
                                  timeout=timeout, output_dir=place.output)
        else:
            process = _run_sandboxed(argv, case, net, net.environment(env), timeout, place,
                                     settings, bwrap)
    return Launched(isolation, process=process, domains=net.domains())


def launch_proof(argv: list[str], *, cwd: Path, env: Mapping[str, str], timeout: float,
                 scratch: Path, output: Path, skill_dir: Path,
                 settings: SandboxSettings) -> Launched:
    """A command that is not a trial (a regression's proof), isolated as a trial is: sandboxed
    when the run's setting and the machine allow, with only ``scratch`` writable, the skill
    directory and its working directory read-only, the runner's own files hidden, and the
    host's network (a proof is not judged on what it contacts). A proof comes from the skill's
    registry, which the agent under evaluation may have written: it is no more trusted than a
    trial."""
    decision = decide(settings, None, "")
    bwrap, reason = _sandbox_for(decision)
    isolation: dict[str, Any] = {"sandbox": "bwrap" if bwrap else "none",
                                 "setting": decision.mode, "network": "host", "reason": reason}
    if decision.mode == "required" and bwrap is None:
        return Launched(isolation, blocked=reason)
    if bwrap is None:
        process = run_process(argv, cwd=cwd, env=env, timeout=timeout, output_dir=output)
    else:
        plan = MountPlan(workspace=scratch, scratch=scratch, cwd=cwd, network="host",
                         readable=(skill_dir, cwd), protected=runner_installation(),
                         hidden=(runs_root(), key_directory(), *settings.hidden))
        process = run_confined(argv, cwd=cwd, env=env, timeout=timeout, output_dir=output,
                               plan=plan, bwrap=bwrap)
    return Launched(isolation, process=process)


def _runners_own(paths: tuple[Path, ...]) -> list[str]:
    """The declared writable paths that lie in the runner's run directories or in its key
    directory: no trial may write there, sandboxed or not (it would reach other trials'
    workspaces and the key that seals results)."""
    own = {"its run directories": runs_root(), "its key directory": key_directory()}
    found = []
    for path in paths:
        real = Path(os.path.realpath(path))
        found += [f"{path} ({what})" for what, directory in own.items()
                  if Path(os.path.realpath(directory)) in (real, *real.parents)]
    return found


def _sandbox_for(decision: Decision) -> tuple[str | None, str | None]:
    """The bwrap to sandbox with (None: no sandbox), and why there is none."""
    if decision.mode == "off":
        return None, decision.shown
    found = available_bwrap()
    if found.problem is None:
        return found.path, None
    if decision.mode == "required":
        return None, f"{decision.shown}, but no trial can be sandboxed here: {found.problem}"
    return None, f"no sandbox on this machine: {found.problem}"


def _run_sandboxed(argv: list[str], case: Case, net: _Network, env: Mapping[str, str],
                   timeout: float, place: Place, settings: SandboxSettings,
                   bwrap: str) -> ProcessResult:
    hidden = (runs_root(), key_directory(), *settings.hidden, *place.hidden)
    plan = MountPlan(
        workspace=place.workspace, scratch=place.scratch, cwd=place.cwd,
        network=net.network, writable=case.writable_paths,
        readable=(*place.readable, *net.visible()),
        protected=(place.skill_dir, *runner_installation(),
                   *programs_under(case.writable_paths, hidden)),
        hidden=hidden,
        lower=None if place.layers is None else place.layers.lower,
        work=None if place.layers is None else place.layers.work,
        shadowed=place.shadowed,
    )
    try:
        return run_confined(argv, cwd=place.cwd, env=env, timeout=timeout,
                            output_dir=place.output, plan=plan, bwrap=bwrap,
                            bridge=net.bridge(), locate=_seen(place.layers))
    finally:
        if place.layers is not None:
            overlay.remove(place.layers.work)


class _Network:
    """A trial's way out, by network mode, and its ``domains`` entry.

    * sandboxed, ``proxy``: a proxy accepting on a port of the sandbox's own loopback (or on a
      Unix socket that a relay inside bridges to that port); the only way out, so its rules
      are enforced. A case without rules gets one too, allowing every host and recording
      what was contacted.
    * sandboxed, ``none``: no way out; rules hold trivially (nothing is contacted).
    * ``host``, or no sandbox: a case with rules gets a proxy on the host's loopback, which a
      client that ignores the proxy variables bypasses: not enforced, and said so.
    """

    def __init__(self, policy: DomainPolicy | None, network: str, sandboxed: bool) -> None:
        self.policy = policy
        self.network = network
        self.sandboxed = sandboxed
        self.proxy: DomainProxy | None = None
        self.directory: str | None = None
        self.failure: str | None = None

    def __enter__(self) -> _Network:
        bridged = self.sandboxed and self.network == "proxy"
        if self.policy is None and bridged:
            self.policy = DomainPolicy(allowed=None)
        if self.policy is None or (self.sandboxed and self.network == "none"):
            return self
        try:  # the command never runs without the guard its case asked for
            self.proxy = DomainProxy.from_environment(self.policy)
            if bridged:
                # Started once the sandbox exists (attach): its socket is made in there.
                self.proxy.inside_port = PROXY_PORT
                self.directory = tempfile.mkdtemp(prefix="proxy-", dir=_socket_parent())
            else:
                self.proxy.start()
                self.proxy.enforced = False
                self.proxy.reason = self._unenforced()
        except (OSError, ValueError) as exc:
            self.failure = f"could not start the domain proxy: {exc}"
            self.proxy = None
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.proxy is not None:
            self.proxy.stop()
        if self.directory is not None:
            shutil.rmtree(self.directory, ignore_errors=True)

    def _unenforced(self) -> str:
        if self.sandboxed:
            return (f"network {self.network}: the trial shares the host's network, so a client "
                    "that ignores the proxy variables connects directly, unseen")
        return ("not sandboxed: the trial shares the host's network, so a client that ignores "
                "the proxy variables connects directly, unseen")

    def environment(self, env: Mapping[str, str]) -> Mapping[str, str]:
        return env if self.proxy is None else proxy_environment(env, self.proxy.url)

    def visible(self) -> tuple[Path, ...]:
        """What a relay would need to see beyond the runner's installation: the directory of
        the proxy's Unix socket."""
        return () if self.directory is None else (Path(self.directory),)

    def bridge(self) -> Bridge | None:
        if self.proxy is None or self.directory is None:
            return None
        return _ProxyBridge(self.proxy, Path(self.directory, "s"))

    def domains(self) -> dict[str, Any] | None:
        if self.failure is not None:
            assert self.policy is not None
            return unenforced_report(self.policy, self.failure)
        if self.proxy is not None:
            return self.proxy.report()
        if self.policy is not None:  # network none, with rules: nothing can get out
            closed = unenforced_report(self.policy, "network none: the trial reaches no host")
            closed.update(enforced=True, reason=None,
                          note="network none: nothing reaches outside the sandbox")
            return closed
        return None


@dataclass
class _ProxyBridge:
    """The domain proxy of a sandboxed trial in network mode proxy: served on a socket made
    on the sandbox's loopback, or, where the runner cannot make one there, on a Unix socket
    for the sandbox's relay."""

    proxy: DomainProxy
    socket_path: Path
    port: int = PROXY_PORT

    def attach(self, init_pid: int) -> bool:
        try:
            listener = listen_inside(init_pid, self.port)
        except OSError:
            self.proxy.start(str(self.socket_path), self.port)
            return False
        self.proxy.serve(listener, self.port)
        return True


def _seen(layers: overlay.Layers | None) -> Callable[[Path], Path] | None:
    """Where the runner reads what the trial will see at a path, when that is not the path.

    Only a path in the workspace is looked up in the layers: elsewhere the trial sees the
    host's own files (read-only), and the command's lookup walks every directory on PATH,
    which through the layers would cost a dozen path walks per trial. (A host symlink into a
    trial's fresh workspace is not followed here; the lookup is a courtesy that words a
    missing program, and a wrong answer can only turn into a failed trial.)"""
    if layers is None:
        return None
    return lambda path: layers.locate(path)[0] if layers.covers(path) else path


def _socket_parent() -> str:
    """A directory for the proxy's socket whose paths fit a Unix socket's 108 bytes."""
    root = runs_root()
    if len(str(root)) < 60 and root.is_dir():
        return str(root)
    return tempfile.gettempdir() if len(tempfile.gettempdir()) < 60 else "/tmp"
