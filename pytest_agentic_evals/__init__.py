"""pytest-agentic-evals: honest, repeatable, fail-closed evaluation of agent skills."""

__version__ = "0.1.0"
