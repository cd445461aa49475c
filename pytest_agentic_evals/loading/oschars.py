"""Text the operating system cannot take, found at load instead of in every trial.

A path, a word of a command or an environment value with a NUL byte cannot be passed to the
kernel at all, and an environment name with ``=`` (or no name) cannot be set: each would load
and then fail every trial with the same low-level error. They are refused with their JSON
pointer, in fixtures and in regression registries alike.
"""

from __future__ import annotations

from typing import Any

from pytest_agentic_evals.problems import Problem, pointer_for

# Keys whose values (and everything under them) reach the kernel as paths, argv or environment.
SYSTEM_KEYS = frozenset({"command", "proof_command", "cwd", "path", "from", "writable_paths",
                         "entrypoints", "env"})


def system_string_problems(data: Any, shown: str) -> list[Problem]:
    """Every NUL byte in a value that becomes a path, an argument or an environment variable,
    and every environment name that cannot be set."""
    problems: list[Problem] = []
    _walk(data, (), False, shown, problems)
    return problems


def _walk(node: Any, parts: tuple[Any, ...], system: bool, shown: str,
          problems: list[Problem]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            here = (*parts, key)
            if parts and parts[-1] == "env" and system:
                problem = _env_name_problem(key)
                if problem:
                    problems.append(Problem(shown, pointer_for(*here), problem))
            _walk(value, here, system or key in SYSTEM_KEYS, shown, problems)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _walk(value, (*parts, index), system, shown, problems)
    elif system and isinstance(node, str) and "\0" in node:
        problems.append(Problem(shown, pointer_for(*parts), _nul_problem(parts)))


def _nul_problem(parts: tuple[Any, ...]) -> str:
    what = "an environment value" if "env" in parts else (
        "a command word" if {"command", "proof_command"} & set(parts) else "a path")
    return f"contains a NUL byte (\\0), which {what} cannot hold"


def _env_name_problem(name: str) -> str | None:
    if not name:
        return "an environment variable needs a name"
    if "\0" in name:
        return "the environment variable's name contains a NUL byte (\\0)"
    if "=" in name:
        return f"environment variable name {name!r} contains '=', which ends a name"
    return None
