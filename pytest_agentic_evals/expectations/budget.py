"""Budgets: what an agent's run may cost, read from its transcript (``expected.budget``).

``{"max_cost_usd": 0.5, "max_input_tokens": 200000, "max_output_tokens": 20000,
"max_turns": 30, "max_tool_calls": 40, "max_duration_seconds": 300}``: each limit is checked
against the figure the transcript states (see ``trajectory``); a limit is kept when the figure
is at most the limit. ``source`` says where the transcript is, as for ``trajectory``, and
defaults to the trajectory's own.

A limit on a figure the transcript does not state is not tested: the failure starts with
``budget not tested`` and the trial is BLOCKED, never PASS. An agent that hides its cost
must not look cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_agentic_evals.expectations.observation import Observation
from pytest_agentic_evals.expectations.trajectory import Unusable, transcript_or_failure
from pytest_agentic_evals.usage import shown

BUDGET_NOT_TESTED = "budget not tested"
# Each limit, the figure it bounds.
LIMITS = {
    "max_cost_usd": "cost_usd",
    "max_input_tokens": "input_tokens",
    "max_output_tokens": "output_tokens",
    "max_turns": "turns",
    "max_tool_calls": "tool_calls",
    "max_duration_seconds": "duration_seconds",
}


_UNUSABLE = Unusable(
    not_found=BUDGET_NOT_TESTED + ": no transcript to read the run's figures from: {}",
    not_understood=BUDGET_NOT_TESTED + ": the transcript is not understood: {}",
    not_a_trajectory="budget: the transcript cannot be read: {}")


def check_budget(value: Mapping[str, Any], observation: Observation) -> list[str]:
    """The ``budget`` expectation kind."""
    transcript = transcript_or_failure(value, observation, _UNUSABLE)
    if isinstance(transcript, str):
        return [transcript]
    failures = []
    for key, limit in value.items():
        figure = LIMITS.get(key)
        if figure is None:
            continue  # source
        seen = transcript.figure(figure)
        if seen is None:
            failures.append(f"{BUDGET_NOT_TESTED}: {key}: {transcript.missing_reason(figure)}")
        elif seen > limit:
            failures.append(f"budget: {key} {shown(figure, limit)} exceeded: the run used "
                            f"{shown(figure, seen)} ({transcript.figures.sources[figure]})")
    return failures


def limit_problems(budget: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Load-time rules the schema cannot say: (pointer below the budget, message)."""
    if not any(key in LIMITS for key in budget):
        return [("", "a budget needs at least one limit: " + ", ".join(LIMITS))]
    return []
