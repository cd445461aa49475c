"""Journey planning: binding requirements to what live discovery observed of an application.

Inputs: the skill's fixture (its capability claims and seams), ``requirements.json``
(``agentic_evals.requirements.v1``: journeys of actions on stable control ids, with oracles),
``discovery-inventory.json`` (the controls observed per state) and ``state-graph.json`` (the
states and the transitions between them). The plan (``agentic_evals.journey_plan.v1``) says per
requirement whether its journey is BOUND to observed, reachable controls, and gives the
shortest executable path through the state graph; it also lists claims no requirement traces
to, journeys whose oracles cannot fail, and observed controls no journey uses.

Everything here is pure: no pytest, nothing is executed, nothing is written. The same inputs
give the same plan, byte for byte: every list follows input order or a sort, ties in path
search are broken by input order, and the plan holds no time and no absolute path.

The modules, in the order data flows through them: ``documents`` (one input file against its
schema), ``graph`` (the inventory and the state graph joined into a network, with
reachability), ``inputs`` (the four inputs checked together), ``router`` (shortest routes),
``binding`` (one requirement's journey), ``plan`` (the whole plan, its gaps and exit status),
``scaffold`` (candidate fixture cases). Only the CLI uses this package.
"""

from pytest_agentic_evals.journeys.inputs import Inputs, load_inputs
from pytest_agentic_evals.journeys.plan import build_plan, exit_status, lines
from pytest_agentic_evals.journeys.scaffold import build_scaffold

__all__ = ["Inputs", "build_plan", "build_scaffold", "exit_status", "lines", "load_inputs"]
