"""Expectations: checking a finished trial against its case's ``expected`` object.

This package's top level is the API for plugins that add expectation kinds (through the
``pytest_agentic_evals_expectation_kinds`` hook): ``ExpectationKind``, the ``Observation`` a
check receives, ``ArtifactError``, and ``json_equal`` for comparisons with JSON's own types.
"""

from pytest_agentic_evals.expectations.builtin import ExpectationKind
from pytest_agentic_evals.expectations.observation import ArtifactError, Observation
from pytest_agentic_evals.jsonvalues import json_equal

__all__ = ["ArtifactError", "ExpectationKind", "Observation", "json_equal"]
