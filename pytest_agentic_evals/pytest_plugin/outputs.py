"""The files a session writes at its end, decided when it starts."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pytest_agentic_evals.jsonio import PinnedOutput
from pytest_agentic_evals.pytest_plugin.settings import Settings


@dataclass(frozen=True)
class Outputs:
    """The files the session writes at its end, pinned before any trial runs (see
    jsonio.PinnedOutput): a trial cannot turn the report into a write elsewhere."""

    report: PinnedOutput | None = None
    markdown: PinnedOutput | None = None


def pin_outputs(config: pytest.Config, settings: Settings) -> Outputs:
    outputs = Outputs(*(PinnedOutput(path) if path else None
                        for path in (settings.report, settings.markdown)))
    for output in (outputs.report, outputs.markdown):
        if output is not None:
            config.add_cleanup(output.close)
    return outputs
