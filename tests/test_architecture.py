"""The package's shape, read from its source: no import cycle, no hidden import, pytest only
in the pytest layer. Read statically (ast), so nothing here depends on import order."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = "pytest_agentic_evals"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE
# Only this layer may import pytest (and pluggy, which is pytest's hook machinery).
PYTEST_LAYER = f"{PACKAGE}.pytest_plugin"
PYTEST_MODULES = ("pytest", "_pytest", "pluggy", "xdist")
# The journey planner stands beside the core: only the command line uses it.
JOURNEYS = f"{PACKAGE}.journeys"
JOURNEY_USERS = (JOURNEYS, f"{PACKAGE}.cli")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(path): path for path in sorted(ROOT.rglob("*.py"))}


def imported_modules(node: ast.Import | ast.ImportFrom, importer: str) -> list[str]:
    """The package modules an import statement loads (a ``from package import module`` names
    the submodule), relative imports resolved against ``importer``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        anchor = importer.split(".")
        is_package = MODULES[importer].name == "__init__.py"
        anchor = anchor[: len(anchor) - node.level + (1 if is_package else 0)]
        base = ".".join([*anchor, base] if base else anchor)
    found = [base]
    found += [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in MODULES]
    return found


# importlib.import_module("...") and pytest's pluginmanager.import_plugin("...") load a module
# later, by name: the module still depends on it.
LAZY_LOADERS = ("import_module", "import_plugin")


def lazy_targets(node: ast.Call) -> list[str]:
    """``importlib.import_module("pytest_agentic_evals....")`` or
    ``config.pluginmanager.import_plugin("...")``: a lazy import is still an edge."""
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
    if name not in LAZY_LOADERS or not node.args:
        return []
    first = node.args[0]
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        return [first.value]
    return []


class Imports(ast.NodeVisitor):
    """Every import of one module, with whether it sits inside a function or class body."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.depth = 0
        self.found: list[tuple[str, int, bool]] = []  # (module, line, nested)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]
    visit_ClassDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Import(self, node: ast.Import) -> None:
        for target in imported_modules(node, self.name):
            self.found.append((target, node.lineno, self.depth > 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        for target in imported_modules(node, self.name):
            self.found.append((target, node.lineno, self.depth > 0))

    def visit_Call(self, node: ast.Call) -> None:
        for target in lazy_targets(node):
            self.found.append((target, node.lineno, False))
        self.generic_visit(node)


def imports_of(name: str) -> list[tuple[str, int, bool]]:
    visitor = Imports(name)
    visitor.visit(ast.parse(MODULES[name].read_text(), filename=str(MODULES[name])))
    return visitor.found


GRAPH = {
    name: sorted({target for target, _, _ in imports_of(name) if target in MODULES} - {name})
    for name in MODULES
}


def find_cycle(graph: dict[str, list[str]]) -> list[str] | None:
    """One import cycle, as the list of modules around it, or None."""
    state: dict[str, str] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        stack.append(node)
        for target in graph[node]:
            if state.get(target) == "open":
                return [*stack[stack.index(target):], target]
            if target not in state and (cycle := visit(target)):
                return cycle
        stack.pop()
        state[node] = "done"
        return None

    for node in graph:
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def test_the_package_has_no_import_cycle() -> None:
    cycle = find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_cycle() -> None:
    # The check above is only worth something if it can fail.
    assert find_cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": ["b"], "b": [], "c": ["b"]}) is None


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_imports_the_package_inside_a_function(name: str) -> None:
    hidden = [f"line {line}: {target}" for target, line, nested in imports_of(name)
              if nested and target.split(".")[0] == PACKAGE]
    assert not hidden, f"{name} hides package imports in functions: {hidden}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_only_the_pytest_layer_imports_pytest(name: str) -> None:
    if name == PYTEST_LAYER or name.startswith(PYTEST_LAYER + "."):
        return
    leaked = [f"line {line}: {target}" for target, line, _ in imports_of(name)
              if target.split(".")[0] in PYTEST_MODULES]
    assert not leaked, f"{name} is outside the pytest layer but imports {leaked}"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_only_the_cli_uses_the_journey_planner(name: str) -> None:
    if name in JOURNEY_USERS or name.startswith(tuple(user + "." for user in JOURNEY_USERS)):
        return
    used = [target for target in GRAPH[name]
            if target == JOURNEYS or target.startswith(JOURNEYS + ".")]
    assert not used, f"{name} imports the journey planner: {used}"


def test_the_import_reader_sees_what_the_checks_rely_on() -> None:
    source = (
        "import pytest\n"
        "from . import model\n"
        "def later():\n"
        "    from pytest_agentic_evals.loading import fixture\n"
        "importlib.import_module('pytest_agentic_evals.report')\n"
        "config.pluginmanager.import_plugin('pytest_agentic_evals.summary')\n"
    )
    visitor = Imports(f"{PACKAGE}.verdicts")
    visitor.visit(ast.parse(source))
    assert ("pytest", 1, False) in visitor.found
    assert (f"{PACKAGE}.model", 2, False) in visitor.found
    assert (f"{PACKAGE}.loading.fixture", 4, True) in visitor.found
    assert (f"{PACKAGE}.report", 5, False) in visitor.found
    assert (f"{PACKAGE}.summary", 6, False) in visitor.found


# What pytest loads of the package in every session where it is installed, plugin on or off.
ENTRY_MODULES = {PACKAGE, PYTEST_LAYER, f"{PYTEST_LAYER}.entry", f"{PYTEST_LAYER}.settings",
                 f"{PYTEST_LAYER}.hookspecs"}


def modules_loaded_by(code: str) -> set[str]:
    """The package's modules in sys.modules after a fresh interpreter runs ``code``."""
    report = "import sys; print(*[m for m in sys.modules if m.startswith('pytest_agentic_evals')])"
    result = subprocess.run([sys.executable, "-c", f"{code}\n{report}"], capture_output=True,
                            text=True, check=True)
    return set(result.stdout.split())


def test_the_plugins_entry_point_loads_nothing_of_the_core() -> None:
    assert modules_loaded_by(f"import {PYTEST_LAYER}.entry") == ENTRY_MODULES


def test_the_entry_point_reader_sees_a_heavy_import() -> None:
    # The check above is only worth something if it can fail.
    assert f"{PACKAGE}.loading" in modules_loaded_by(f"import {PYTEST_LAYER}.nodes")


def test_the_commands_help_loads_no_command_module_and_no_pytest() -> None:
    # The dispatcher imports a command's module only when that command runs.
    loaded = modules_loaded_by(
        "import contextlib, sys\n"
        "from pytest_agentic_evals.cli.main import main\n"
        "with contextlib.redirect_stdout(None), contextlib.suppress(SystemExit):\n"
        "    main(['--help'])\n"
        "print(*(['pytest'] if 'pytest' in sys.modules else []))"
    )
    commands = {name for name in loaded if name.startswith(f"{PACKAGE}.cli.")}
    assert commands == {f"{PACKAGE}.cli.main", f"{PACKAGE}.cli.common"}
    assert "pytest" not in loaded
    assert not [name for name in loaded if name.startswith(PYTEST_LAYER)]


def test_a_command_loads_its_own_module_only() -> None:
    # The control for the test above: the same reader sees the module of the command run.
    loaded = modules_loaded_by(
        "import contextlib\n"
        "from pytest_agentic_evals.cli.main import main\n"
        "with contextlib.redirect_stdout(None), contextlib.suppress(SystemExit):\n"
        "    main(['schema', 'fixture'])\n"
    )
    assert f"{PACKAGE}.cli.documents" in loaded
    assert f"{PACKAGE}.cli.run" not in loaded
