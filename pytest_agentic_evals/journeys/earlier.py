"""State graphs written for the earlier tool: read with the meaning that tool gave them.

The earlier tool accepted any JSON as its state graph (a list of transitions, an object of
states and edges in a shape of its own, even ``{}``) and used none of it to bind: a control
was bound when discovery had observed it in any state. A graph here is an
``agentic_evals.state_graph.v1`` graph when it says so (``schema``) or names its
``initial_state``, which the earlier tool never read; every other decodable document is the
earlier tool's, and planning binds over it as that tool did: every observed control in one
state, reachable, with no routes between states. The plan says so (``graph.form``).
"""

from __future__ import annotations

from typing import Any

from pytest_agentic_evals.journeys.documents import Document

GRAPH_SCHEMA = "agentic_evals.state_graph.v1"
# The one state of an earlier graph: where every observed control is.
OBSERVED_STATE = "observed"
FORM_STATE_GRAPH = "state_graph.v1"
FORM_EARLIER = "earlier"
NOTE = ("is not an agentic_evals.state_graph.v1 graph (it names no initial_state): read as "
        "the earlier tool read it, every control observed in the inventory reachable in one "
        "state and no route planned between states; give initial_state, states and "
        "transitions to have routes planned")


def is_earlier_graph(data: Any) -> bool:
    """Whether a decoded state graph is the earlier tool's (see the module's text)."""
    return not (isinstance(data, dict)
                and ("initial_state" in data or data.get("schema") == GRAPH_SCHEMA))


def flattened(inventory: Document, graph: Document) -> tuple[Document, Document]:
    """The inventory with every entry's ``state`` left out (all its controls observed in one
    state), and the one-state graph the earlier tool's binding amounts to."""
    entries = [{key: value for key, value in entry.items() if key != "state"}
               for entry in inventory.data["inventory"]]
    flat_inventory = Document(inventory.path, inventory.shown, inventory.sha256,
                              {**inventory.data, "inventory": entries})
    one_state = {"initial_state": OBSERVED_STATE, "states": [{"id": OBSERVED_STATE}],
                 "transitions": []}
    return flat_inventory, Document(graph.path, graph.shown, graph.sha256, one_state)
