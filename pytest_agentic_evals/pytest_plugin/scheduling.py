"""Longest first under xdist: the trials handed out one at a time, in collection order.

xdist's load scheduling sends each worker a run of consecutive items at first (a quarter of
its share), which keeps pytest's own order for fixtures' sake but puts the first items, the
longest ones once the trials are ordered by duration, on the same worker one after the other.
This scheduling hands the items out round robin instead, and keeps each worker at two: the
one it runs and the next one, which an xdist worker needs to know before it runs an item.
Every other behaviour (identical collections, crashed workers, shutdown) is xdist's own.
"""

from __future__ import annotations

from typing import Any

from xdist.scheduler import LoadScheduling

QUEUED_PER_WORKER = 2  # the item running and the one after it


class LongestFirstScheduling(LoadScheduling):  # type: ignore[misc]  # xdist has no types
    collection: list[str] | None
    pending: list[int]
    node2pending: dict[Any, list[int]]
    node2collection: dict[Any, list[str]]

    def schedule(self) -> None:
        assert self.collection_is_completed
        if self.collection is not None:  # a later call: new workers are given work
            for node in self.nodes:
                self.check_schedule(node)
            return
        if not self._check_nodes_have_same_collection():
            self.log("**Different tests collected, aborting run**")
            return
        collection = next(iter(self.node2collection.values()))
        self.collection = collection
        self.pending[:] = range(len(collection))
        for _ in range(QUEUED_PER_WORKER):
            for node in self.nodes:
                self._send_tests(node, 1)
        if not self.pending:
            for node in self.nodes:
                node.shutdown()

    def check_schedule(self, node: Any, duration: float = 0) -> None:
        if node.shutting_down:
            return
        if self.pending:
            self._send_tests(node, max(0, QUEUED_PER_WORKER - len(self.node2pending[node])))
        else:
            node.shutdown()
        self.log("num items waiting for node:", len(self.pending))
