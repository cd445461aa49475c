"""The ``agentic-evals`` command."""
