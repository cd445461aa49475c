"""Per-case figures of agent runs over trials: mean and 95th percentile of each figure.

Each trial's report entry carries ``usage``: the figures its transcript states (cost, tokens,
turns, tool calls, duration), None where the transcript states none. A case's statistics are
taken over the trials that state the figure, and say how many those are: a mean over two
trials of five is not a mean over five.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

# The figures, in the order summaries show them, with their column titles.
FIGURE_TITLES = {
    "cost_usd": "cost (USD)",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "turns": "turns",
    "tool_calls": "tool calls",
    "duration_seconds": "duration (s)",
}


def percentile_95(values: list[float]) -> float:
    """The nearest-rank 95th percentile: the smallest value at or above 95% of the values.

    With fewer than 20 trials that is the largest value, which is the honest answer: there is
    no sample of the slowest 5% to leave out.
    """
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


def case_usage(trials: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """``{figure: {"mean", "p95", "trials"}}`` over the trials that state it; None if none do."""
    seen: dict[str, list[float]] = {}
    for trial in trials:
        usage = trial.get("usage")
        if not isinstance(usage, Mapping):
            continue
        for name in FIGURE_TITLES:
            value = usage.get(name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                seen.setdefault(name, []).append(value)
    if not seen:
        return None
    return {name: {"mean": round(mean(values), 6),
                   "p95": round(percentile_95(values), 6), "trials": len(values)}
            for name, values in ((n, seen[n]) for n in FIGURE_TITLES if n in seen)}


def mean(values: list[float]) -> float:
    """The mean, divided before it is added up: figures each within a float's range (a
    transcript's figures are: see ``Figures``) never add up to an infinite mean."""
    share = math.fsum(value / len(values) for value in values)
    return min(share, max(values))  # rounding cannot take it past the largest figure


def shown(name: str, value: float) -> str:
    """A figure for a person: dollars to four places (at least cents), seconds to the tenth,
    counts as they are."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # no transcript gives one (see ``Figures``); a report edited by hand
    if name == "cost_usd":
        whole, _, cents = f"{value:.4f}".partition(".")
        return f"${whole}.{cents.rstrip('0').ljust(2, '0')}"
    if name == "duration_seconds":
        return f"{value:.1f}s"
    return f"{value:.1f}" if value != int(value) else str(int(value))


def usage_cell(name: str, figures: Mapping[str, Any] | None, ran: int) -> str:
    """``mean / p95`` of one figure, with the trials counted when not every trial stated it."""
    entry = (figures or {}).get(name)
    if not entry:
        return "-"
    text = f"{shown(name, entry['mean'])} / {shown(name, entry['p95'])}"
    return text if entry["trials"] == ran else f"{text} ({entry['trials']} of {ran} trials)"
