"""What a fixture command really runs, judged without running it.

The anti-slush contract and live qualification ask of a command: does it prove anything,
does it reach the skill's own code, does it feed itself stub inputs, does it sample fresh
inputs? This package answers by flattening the command into the simple commands a shell would
run, and judging those. Nothing here executes a command.
"""

from pytest_agentic_evals.shell.commands import (
    CommandParseError,
    Sampling,
    SimpleCommand,
    fixture_stub_inputs,
    real_world_entrypoint,
    sampling,
    simple_commands,
    triviality,
)

__all__ = [
    "CommandParseError",
    "Sampling",
    "SimpleCommand",
    "fixture_stub_inputs",
    "real_world_entrypoint",
    "sampling",
    "simple_commands",
    "triviality",
]
