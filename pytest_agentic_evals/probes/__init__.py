"""Vacuity probes: does each case's oracle fail when the skill is broken?  Find out by running it.

Whether an oracle "can fail" is otherwise a static guess, wrong both ways: a marker printed
only after ``test`` checks looks weak and bites; an oracle that looks strong may pass a skill
that does nothing.  A probe runs every case once against stand-ins of a broken skill swapped
in for its entrypoint (mutation testing applied to an evaluation suite) and records which
survive.  ``targets`` names the stand-ins and finds a case's entrypoint, ``mutants`` puts one
in place, ``standin`` is the broken skill itself, ``runner`` probes a fixture, ``results``
turns that into the report and its summaries, and ``store`` keeps the results beside the
fixture, keyed by the case's identity, for coverage and claims.
"""
