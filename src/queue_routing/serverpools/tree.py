"""The activity graph and its spanning tree: every graph operation of Part C in one place.

The bipartite graph has the customer classes and the server pools as nodes and the
activities as edges. Conventions, used by every function here and in the other modules:

``nodes``   integers: classes ``0..I-1``, then pools ``I..I+J-1`` (pool j is node ``I + j``);
            messages name them from 1 ("class 1", "pool 1");
``edges``   activities ``(i, j)``, 0-based class and pool indices, an integer array of
            shape ``(K, 2)`` (any sequence of pairs is accepted where the docstring says so).

Under complete resource pooling the basic activities of the SPP form a spanning tree
(``K = I + J - 1`` edges, connected); the linearisation (:mod:`.linear`) solves its node
equations by leaf peeling (:func:`peel_leaves`), the fluid integrator (:mod:`.fluid`)
walks it in preorder (:func:`rooted_tree`) and the simulator (:mod:`.simulation`) looks up
the edges at a node (:func:`grouped_edges`). :func:`random_spanning_tree` draws the trees of
the instability search (:mod:`.search`).

>>> edges = np.array([[0, 0], [1, 0], [1, 1]])  # the N-shape C1 - P1 - C2 - P2
>>> is_spanning_tree(edges, 2, 2)
True
>>> adjacency(edges, 2, 2)  # node 2 + j is pool j
[[2], [2, 3], [0, 1], [1]]
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple

import numpy as np

from .errors import DisconnectedError, NotATreeError, ServerPoolError, listing

__all__ = [
    "RootedTree",
    "adjacency",
    "check_spanning_tree",
    "components",
    "components_text",
    "cycle_text",
    "edge_names",
    "find_cycle",
    "greedy_spanning_tree",
    "grouped_edges",
    "is_spanning_tree",
    "node_names",
    "peel_leaves",
    "random_spanning_tree",
    "rooted_tree",
]


# -- names ----------------------------------------------------------------------------------
def node_names(nodes, n_classes: int) -> str:
    """``"class 1, pool 2"``: the nodes (0-based, pools from ``n_classes``) numbered from 1.

    >>> node_names([0, 3], 2)
    'class 1, pool 2'
    """
    return ", ".join(
        f"class {v + 1}" if v < n_classes else f"pool {v - n_classes + 1}" for v in nodes
    )


def edge_names(edges) -> str:
    """``"(class 1, pool 1), (class 2, pool 1)"``: edges (pairs, 0-based) numbered from 1.

    >>> edge_names([(0, 0), (1, 0)])
    '(class 1, pool 1), (class 2, pool 1)'
    """
    return ", ".join(f"(class {int(i) + 1}, pool {int(j) + 1})" for i, j in edges)


def cycle_text(cycle, n_classes: int, limit: int = 6) -> str:
    """A closed node walk ``[v0, ..., v0]`` as ``"class 1 - pool 2 - ... - class 1"``, short.

    Walks of more than ``limit`` nodes show their first ``limit - 2`` nodes, then the
    number of nodes on the cycle.

    >>> cycle_text([0, 2, 1, 3, 0], 2)
    'class 1 - pool 1 - class 2 - pool 2 - class 1'
    >>> cycle_text([0, 5, 1, 6, 2, 7, 3, 8, 4, 9, 0], 5)  # 5 classes, 5 pools
    'class 1 - pool 1 - class 2 - pool 2 - ... - class 1 (a cycle of 10 nodes)'
    """
    cycle = [int(v) for v in cycle]
    names = [node_names([v], n_classes) for v in cycle]
    if len(cycle) <= limit:
        return " - ".join(names)
    return " - ".join([*names[: limit - 2], "...", names[-1]]) + (
        f" (a cycle of {len(cycle) - 1} nodes)"
    )


def components_text(comps, n_classes: int, limit: int = 3) -> str:
    """``"{class 1, pool 1}; {class 2, pool 2} and N more"``: components, a few nodes each."""
    return listing(
        ("{" + listing(node_names([v], n_classes) for v in c) + "}" for c in comps),
        limit,
        sep="; ",
    )


# -- structure ------------------------------------------------------------------------------
def adjacency(edges, n_classes: int, n_pools: int) -> list[list[int]]:
    """Neighbour lists of the ``n_classes + n_pools`` nodes, in the order of ``edges``.

    ``edges``: pairs ``(i, j)``, 0-based (array ``(K, 2)`` or a sequence of pairs).
    """
    adj: list[list[int]] = [[] for _ in range(n_classes + n_pools)]
    for i, j in edges:
        adj[int(i)].append(n_classes + int(j))
        adj[n_classes + int(j)].append(int(i))
    return adj


def components(edges: np.ndarray, n_classes: int, n_pools: int) -> list[list[int]]:
    """Connected components of the bipartite graph, as sorted node lists (by smallest node).

    >>> components(np.array([[0, 0], [1, 1]]), 2, 2)  # C1 - P1 and C2 - P2
    [[0, 2], [1, 3]]
    """
    adj = adjacency(edges, n_classes, n_pools)
    seen = [False] * len(adj)
    comps = []
    for start in range(len(adj)):
        if seen[start]:
            continue
        seen[start] = True
        comp, todo = [start], deque([start])
        while todo:
            for w in adj[todo.popleft()]:
                if not seen[w]:
                    seen[w] = True
                    comp.append(w)
                    todo.append(w)
        comps.append(sorted(comp))
    return comps


def _root(parent: list[int], v: int) -> int:
    """The root of node ``v`` in the union-find forest ``parent`` (a node's parent, roots
    their own), halving the path on the way (in place)."""
    while parent[v] != v:
        parent[v] = parent[parent[v]]
        v = parent[v]
    return v


def find_cycle(edges: np.ndarray, n_classes: int, n_pools: int) -> list[int] | None:
    """A cycle of the bipartite graph as a closed node walk ``[v0, ..., v0]``, or None.

    Edges are added in order to a union-find forest; the first edge closing a cycle is
    returned with the forest path between its ends.

    >>> complete = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])  # K_{2,2}
    >>> node_names(find_cycle(complete, 2, 2), 2)  # (2, 2) closes C2 - P1 - C1 - P2
    'class 2, pool 1, class 1, pool 2, class 2'
    >>> find_cycle(complete[:3], 2, 2) is None
    True
    """
    parent = list(range(n_classes + n_pools))  # union-find forest (:func:`_root`)
    forest: list[tuple[int, int]] = []
    for i, j in edges:
        a, b = int(i), n_classes + int(j)
        ra, rb = _root(parent, a), _root(parent, b)
        if ra == rb:  # (a, b) closes a cycle: add the forest path b -> a
            adj = adjacency(np.array(forest, dtype=np.int64).reshape(-1, 2), n_classes, n_pools)
            prev = {b: b}
            todo = deque([b])
            while todo:
                v = todo.popleft()
                for w in adj[v]:
                    if w not in prev:
                        prev[w] = v
                        todo.append(w)
            path = [a]
            while path[-1] != b:
                path.append(prev[path[-1]])
            return [*path, a]
        parent[ra] = rb
        forest.append((int(i), int(j)))
    return None


def greedy_spanning_tree(edges, n_classes: int, n_pools: int, order) -> np.ndarray:
    """Kruskal: indices (into ``edges``, sorted) of a spanning forest taking edges in ``order``.

    An edge is kept unless it closes a cycle with the edges kept before it; the result is a
    spanning tree iff the graph is connected.

    >>> complete = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])  # K_{2,2}
    >>> greedy_spanning_tree(complete, 2, 2, [3, 2, 1, 0]).tolist()  # (1, 1) closes a cycle
    [1, 2, 3]
    """
    parent = list(range(n_classes + n_pools))  # union-find forest (:func:`_root`)
    kept = []
    for k in order:
        a, b = _root(parent, int(edges[k][0])), _root(parent, n_classes + int(edges[k][1]))
        if a != b:
            parent[a] = b
            kept.append(int(k))
    return np.array(sorted(kept), dtype=np.int64)


def is_spanning_tree(edges: np.ndarray, n_classes: int, n_pools: int) -> bool:
    """Whether ``edges`` form a spanning tree: I + J - 1 edges and one component."""
    return len(edges) == n_classes + n_pools - 1 and len(components(edges, n_classes, n_pools)) == 1


def check_spanning_tree(edges: np.ndarray, n_classes: int, n_pools: int) -> np.ndarray:
    """Return ``edges`` if they form a spanning tree of I u J; else raise, naming the nodes.

    Raises :class:`~.errors.NotATreeError` (naming the cycle) or
    :class:`~.errors.DisconnectedError` (naming the components).

    >>> try:
    ...     check_spanning_tree(np.array([[0, 0], [1, 1]]), 2, 2)
    ... except DisconnectedError as err:
    ...     print(err.kind, str(err).split(": ", 1)[1])
    disconnected basic activities split I u J into 2 components {class 1, pool 1}; {class 2, pool 2}
    """
    cycle = find_cycle(edges, n_classes, n_pools)
    if cycle is not None:
        nodes = cycle[:-1]
        raise NotATreeError(
            "basic activities contain the cycle " + cycle_text(cycle, n_classes),
            classes=sorted(v + 1 for v in nodes if v < n_classes),
            pools=sorted(v - n_classes + 1 for v in nodes if v >= n_classes),
        )
    comps = components(edges, n_classes, n_pools)
    if len(comps) > 1:
        raise DisconnectedError(
            f"basic activities split I u J into {len(comps)} components "
            + components_text(comps, n_classes),
            classes=range(1, n_classes + 1),
            pools=range(1, n_pools + 1),
        )
    return edges


# -- computations on a spanning tree ----------------------------------------------------------
def peel_leaves(
    edges: np.ndarray, class_targets: np.ndarray, pool_targets: np.ndarray
) -> np.ndarray:
    """Solve ``sum_j z_ij = class_targets[i]``, ``sum_i z_ij = pool_targets[j]`` on a tree.

    ``edges``: a spanning tree, shape ``(K_b, 2)``. Targets have shape ``(I, m)`` and
    ``(J, m)`` (m right-hand sides, e.g. coefficient rows over the I state variables, in any
    common unit); they must be consistent (equal column sums). Returns ``z``, shape
    ``(K_b, m)``, in the order of ``edges`` and in the unit of the targets. Leaves are
    peeled in a fixed order: a leaf's edge takes the leaf's residual target, which is then
    subtracted from its neighbour's.

    >>> edges = np.array([[0, 0], [1, 0], [1, 1]])  # C1 - P1 - C2 - P2
    >>> z = peel_leaves(edges, np.array([[1.0], [2.0]]), np.array([[1.5], [1.5]]))
    >>> z.ravel().tolist()  # z_11 = 1 (class 1 a leaf), z_22 = 1.5 (pool 2 a leaf)
    [1.0, 0.5, 1.5]
    """
    n_i = class_targets.shape[0]
    n_nodes = n_i + pool_targets.shape[0]
    residual = np.concatenate([class_targets, pool_targets]).astype(float)
    incident: list[list[int]] = [[] for _ in range(n_nodes)]
    for e, (i, j) in enumerate(edges):
        incident[int(i)].append(e)
        incident[n_i + int(j)].append(e)
    ends = [(int(i), n_i + int(j)) for i, j in edges]
    degree = [len(x) for x in incident]
    done = np.zeros(len(edges), dtype=bool)
    out = np.zeros((len(edges), residual.shape[1]))
    leaves = [v for v in range(n_nodes) if degree[v] == 1]
    while leaves:
        v = leaves.pop()
        if degree[v] != 1:  # the last node of the tree: nothing left to assign
            continue
        e = next(e for e in incident[v] if not done[e])
        u = ends[e][0] + ends[e][1] - v
        out[e] = residual[v]
        residual[u] -= residual[v]
        done[e] = True
        degree[v] = 0
        degree[u] -= 1
        if degree[u] == 1:
            leaves.append(u)
    return out


class RootedTree(NamedTuple):
    """A spanning tree rooted at class 0, in depth-first preorder (all arrays ``int64``).

    Attributes
    ----------
    edges:
        The tree's edges (0-based (i, j)), C-contiguous, shape ``(I + J - 1, 2)``.
    order:
        The nodes in preorder, shape ``(I + J,)``; ``order[0]`` is the root (class 0).
    pos:
        ``pos[v]``: index of node v in ``order``, shape ``(I + J,)``.
    size:
        ``size[v]``: number of nodes in the subtree of v, which is
        ``order[pos[v] : pos[v] + size[v]]``, shape ``(I + J,)``.
    parent:
        Parent node of every node (-1 at the root), shape ``(I + J,)``.
    parent_edge:
        Index in ``edges`` of the edge from v to its parent (-1 at the root), ``(I + J,)``.
    """

    edges: np.ndarray
    order: np.ndarray
    pos: np.ndarray
    size: np.ndarray
    parent: np.ndarray
    parent_edge: np.ndarray


def rooted_tree(edges: np.ndarray, n_classes: int, n_pools: int) -> RootedTree:
    """Preorder of the spanning tree ``edges`` rooted at class 0 (see :class:`RootedTree`).

    Neighbours are visited in the order of ``edges``. Raises
    :class:`~.errors.ServerPoolError` unless ``edges`` is a spanning tree.

    >>> t = rooted_tree(np.array([[0, 0], [1, 0], [1, 1]]), 2, 2)  # C1 - P1 - C2 - P2
    >>> t.order.tolist(), t.parent.tolist(), t.size.tolist()
    ([0, 2, 1, 3], [-1, 2, 0, 1], [4, 2, 3, 1])
    """
    n_i, n_j = n_classes, n_pools
    edges = np.ascontiguousarray(edges, dtype=np.int64)
    n = n_i + n_j
    if len(edges) != n - 1:
        raise ServerPoolError(
            f"the basic activities must form a spanning tree: {len(edges)} edges for {n} nodes"
        )
    adj: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for e, (i, j) in enumerate(edges):
        adj[int(i)].append((n_i + int(j), e))
        adj[n_i + int(j)].append((int(i), e))
    parent = np.full(n, -1, dtype=np.int64)
    parent_edge = np.full(n, -1, dtype=np.int64)
    order: list[int] = []
    seen = np.zeros(n, dtype=bool)
    stack = [0]
    seen[0] = True
    while stack:
        v = stack.pop()
        order.append(v)
        for w, e in reversed(adj[v]):
            if not seen[w]:
                seen[w] = True
                parent[w] = v
                parent_edge[w] = e
                stack.append(w)
    if len(order) != n:
        raise ServerPoolError("the basic activities do not connect all classes and pools")
    order_arr = np.array(order, dtype=np.int64)
    pos = np.empty(n, dtype=np.int64)
    pos[order_arr] = np.arange(n)
    size = np.ones(n, dtype=np.int64)
    for v in order[::-1]:
        if parent[v] >= 0:
            size[parent[v]] += size[v]
    return RootedTree(edges, order_arr, pos, size, parent, parent_edge)


def grouped_edges(ends: np.ndarray, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges grouped by one of their ends (compressed sparse rows): ``(ptr, index)``.

    ``ends``: for every edge, the (0-based) class or pool it is grouped by, e.g.
    ``edges[:, 1]``, shape ``(K,)``; ``n_nodes``: I or J. The edges at node v are
    ``index[ptr[v] : ptr[v + 1]]``, in increasing edge order; ``ptr`` has shape
    ``(n_nodes + 1,)`` and ``index`` shape ``(K,)``, both ``int64``.

    >>> edges = np.array([[0, 0], [1, 0], [1, 1]])
    >>> ptr, index = grouped_edges(edges[:, 1], 2)  # the edges of each pool
    >>> [index[ptr[j] : ptr[j + 1]].tolist() for j in range(2)]
    [[0, 1], [2]]
    """
    order = np.argsort(ends, kind="stable").astype(np.int64)
    ptr = np.zeros(n_nodes + 1, dtype=np.int64)
    np.add.at(ptr, ends + 1, 1)
    return np.cumsum(ptr), order


# -- random trees -----------------------------------------------------------------------------
def random_spanning_tree(n_classes: int, n_pools: int, rng: np.random.Generator) -> np.ndarray:
    """A uniform random spanning tree of K_{I,J}: edges (i, j), 0-based, sorted, ``(I+J-1, 2)``.

    Aldous-Broder: a simple random walk on K_{I,J} from a uniform start node; the edge by
    which each node is first entered is kept.

    >>> tree = random_spanning_tree(3, 4, np.random.default_rng(1))
    >>> tree.shape, is_spanning_tree(tree, 3, 4)
    ((6, 2), True)
    """
    if n_classes < 1 or n_pools < 1:
        raise ServerPoolError(f"need n_classes, n_pools >= 1, got ({n_classes}, {n_pools})")
    n_nodes = n_classes + n_pools
    seen = np.zeros(n_nodes, dtype=bool)
    v = int(rng.integers(n_nodes))
    seen[v] = True
    edges = []
    while len(edges) < n_nodes - 1:
        if v < n_classes:  # class -> uniform pool
            w = n_classes + int(rng.integers(n_pools))
        else:  # pool -> uniform class
            w = int(rng.integers(n_classes))
        if not seen[w]:
            seen[w] = True
            edges.append((min(v, w), max(v, w) - n_classes))
        v = w
    out = np.array(sorted(edges), dtype=np.int64).reshape(-1, 2)
    return out
