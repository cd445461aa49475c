"""Routes through the state network: from the initial state along the shortest-path tree the
network holds, and between any two states by a bidirectional breadth-first search.

Ties are broken by input order (of states, then of transitions), so a route is the same for
the same inputs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_agentic_evals.journeys.graph import Network


class Router:
    """Shortest routes through the network, from the initial state or from anywhere."""

    def __init__(self, network: Network) -> None:
        self.network = network
        self._cache: dict[tuple[int, str], tuple[int, list[int]] | None] = {}
        self._pairs: tuple[list[list[tuple[int, int]]],
                           list[list[tuple[int, int]]]] | None = None

    def from_initial(self, targets: Sequence[int]) -> tuple[int, list[int]]:
        """The nearest target (fewest transitions, then input order) and the route to it."""
        net = self.network
        source = net.transitions.source
        nearest = min(targets, key=lambda state: (net.distance[state], state))
        route = []
        state = nearest
        while net.via[state] >= 0:
            route.append(net.via[state])
            state = source[net.via[state]]
        route.reverse()
        return nearest, route

    def between(self, start: int, qid: str, targets: Sequence[int]) -> tuple[int, list[int]] | None:
        """The nearest target reachable from ``start`` and a shortest route to it, or None.

        A bidirectional breadth-first search: from ``start`` forwards and from every target
        backwards, a whole level at a time on the smaller side. It meets after visiting about
        the square root of what a one-sided search visits, which is what keeps a thousand
        journeys over a large graph within seconds. The first level where the two sides meet
        holds a shortest route; among its meetings the shortest total wins, then the first
        found, which input order decides: the answer is the same for the same inputs.
        """
        key = (start, qid)
        if key not in self._cache:
            self._cache[key] = self._search(start, targets)
        return self._cache[key]

    def _search(self, start: int, targets: Sequence[int]) -> tuple[int, list[int]] | None:
        goals = set(targets)
        if start in goals:
            return start, []
        # Adjacency as (transition, neighbour) pairs, bound to locals: this loop is the hot
        # spot of planning over a large graph.
        forward_edges, backward_edges = self._edges()
        ahead: dict[int, int] = {start: -1}  # state -> transition that entered it
        ahead_depth = {start: 0}
        behind: dict[int, int] = dict.fromkeys(goals, -1)  # state -> transition towards a goal
        behind_depth = dict.fromkeys(goals, 0)
        forward, backward = [start], sorted(goals)
        depth_ahead = depth_behind = 0
        while forward and backward:
            # Grow the smaller side by one level; stop at the first level where they meet.
            if len(forward) <= len(backward):
                depth_ahead += 1
                forward, meeting = _grow(forward, forward_edges, ahead, ahead_depth,
                                         depth_ahead, behind_depth)
            else:
                depth_behind += 1
                backward, meeting = _grow(backward, backward_edges, behind, behind_depth,
                                          depth_behind, ahead_depth)
            if meeting >= 0:
                return self._join(meeting, ahead, behind)
        return None

    def _edges(self) -> tuple[list[list[tuple[int, int]]], list[list[tuple[int, int]]]]:
        if self._pairs is None:
            moves = self.network.transitions
            self._pairs = ([[(t, moves.target[t]) for t in out] for out in moves.out],
                           [[(t, moves.source[t]) for t in into] for into in moves.into])
        return self._pairs

    def _join(self, meeting: int, ahead: Mapping[int, int],
              behind: Mapping[int, int]) -> tuple[int, list[int]]:
        moves = self.network.transitions
        route: list[int] = []
        state = meeting
        while ahead[state] >= 0:
            route.append(ahead[state])
            state = moves.source[ahead[state]]
        route.reverse()
        state = meeting
        while behind[state] >= 0:
            route.append(behind[state])
            state = moves.target[behind[state]]
        return state, route


def _grow(frontier: list[int], edges: Sequence[Sequence[tuple[int, int]]],
          seen: dict[int, int], seen_depth: dict[int, int], depth: int,
          other_depth: Mapping[int, int]) -> tuple[list[int], int]:
    """One level of one side of the bidirectional search: the next frontier, and the state
    where this level meets the other side by the shortest total (-1 when it does not)."""
    best_total, meeting = -1, -1
    following = []
    for state in frontier:
        for transition, reached in edges[state]:
            if reached in seen:
                continue
            seen[reached] = transition
            seen_depth[reached] = depth
            following.append(reached)
            if reached in other_depth:
                total = depth + other_depth[reached]
                if best_total < 0 or total < best_total:
                    best_total, meeting = total, reached
    return following, meeting
