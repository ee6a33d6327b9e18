"""Part C activity tree (serverpools.tree) and the shape of the public API.

The tree operations are checked against brute-force definitions on random trees and graphs;
the API checks are structural: the package exports every public name of its modules, and no
module of the subpackage imports a private (underscore) name from another module.
"""

import ast
import importlib
from itertools import pairwise
from pathlib import Path

import numpy as np
import pytest

import queue_routing.serverpools as sp
from queue_routing.seeding import rng_for
from queue_routing.serverpools import (
    DisconnectedError,
    NotATreeError,
    ServerPoolError,
    adjacency,
    check_spanning_tree,
    components,
    find_cycle,
    grouped_edges,
    is_spanning_tree,
    peel_leaves,
    random_spanning_tree,
    rooted_tree,
)

PACKAGE = Path(sp.__file__).parent


def random_tree(n_i, n_j, k):
    return random_spanning_tree(n_i, n_j, rng_for(4, "test-serverpools-tree-ops", n_i, n_j, k))


SIZES = [(1, 1), (1, 4), (4, 1), (3, 3), (5, 7)]


@pytest.mark.parametrize(("n_i", "n_j"), SIZES)
def test_rooted_tree_is_a_preorder(n_i, n_j):
    for k in range(5):
        edges = random_tree(n_i, n_j, k)
        t = rooted_tree(edges, n_i, n_j)
        n = n_i + n_j
        assert t.order[0] == 0 and sorted(t.order.tolist()) == list(range(n))
        np.testing.assert_array_equal(t.order[t.pos], np.arange(n))
        for v in range(1, n):
            u, e = t.parent[v], t.parent_edge[v]
            assert {int(edges[e, 0]), n_i + int(edges[e, 1])} == {int(u), v}
            assert t.pos[u] < t.pos[v]  # a parent comes before its children
            subtree = set(t.order[t.pos[v] : t.pos[v] + t.size[v]].tolist())
            assert u not in subtree and v in subtree
            # the subtree of v is closed under taking children
            assert all(t.parent[w] in subtree for w in subtree - {v})
        assert t.size[0] == n and t.parent[0] == -1 and t.parent_edge[0] == -1


@pytest.mark.parametrize(("n_i", "n_j"), SIZES)
def test_peel_leaves_solves_the_node_equations(n_i, n_j):
    for k in range(5):
        edges = random_tree(n_i, n_j, k)
        rng = rng_for(4, "test-serverpools-peel", n_i, n_j, k)
        class_targets = rng.normal(size=(n_i, 3))
        pool_targets = rng.normal(size=(n_j, 3))
        pool_targets += (class_targets.sum(axis=0) - pool_targets.sum(axis=0)) / n_j
        z = peel_leaves(edges, class_targets, pool_targets)
        for i in range(n_i):
            np.testing.assert_allclose(z[edges[:, 0] == i].sum(axis=0), class_targets[i])
        for j in range(n_j):
            np.testing.assert_allclose(z[edges[:, 1] == j].sum(axis=0), pool_targets[j])


def test_grouped_edges_lists_the_edges_of_every_node():
    edges = random_tree(4, 5, 0)
    for side, n in ((0, 4), (1, 5)):
        ptr, index = grouped_edges(edges[:, side], n)
        assert ptr.dtype == index.dtype == np.int64
        for v in range(n):
            assert (
                index[ptr[v] : ptr[v + 1]].tolist() == np.flatnonzero(edges[:, side] == v).tolist()
            )


def test_cycles_and_components_of_random_graphs():
    for k in range(30):
        rng = rng_for(4, "test-serverpools-graph", k)
        n_i, n_j = (int(x) for x in rng.integers(1, 5, size=2))
        mask = rng.random((n_i, n_j)) < 0.5
        edges = np.argwhere(mask).astype(np.int64)
        comps = components(edges, n_i, n_j)
        assert sorted(v for c in comps for v in c) == list(range(n_i + n_j))
        adj = adjacency(edges, n_i, n_j)
        label = {v: c for c, nodes in enumerate(comps) for v in nodes}
        assert all(label[v] == label[w] for v in range(n_i + n_j) for w in adj[v])
        # a forest has exactly nodes - components edges
        cycle = find_cycle(edges, n_i, n_j)
        assert (cycle is None) == (len(edges) == n_i + n_j - len(comps))
        if cycle is not None:
            assert cycle[0] == cycle[-1] and len(set(cycle[:-1])) == len(cycle) - 1 >= 4
            for v, w in pairwise(cycle):
                assert w in adj[v]
        assert is_spanning_tree(edges, n_i, n_j) == (cycle is None and len(comps) == 1)


def test_check_spanning_tree_names_the_problem():
    tree = np.array([[0, 0], [1, 0], [1, 1]])
    assert check_spanning_tree(tree, 2, 2) is tree
    with pytest.raises(NotATreeError, match="cycle class 2 - pool 1 - class 1 - pool 2"):
        check_spanning_tree(np.array([[0, 0], [0, 1], [1, 0], [1, 1]]), 2, 2)
    with pytest.raises(DisconnectedError, match=r"\{class 1, pool 1\}; \{class 2, pool 2\}"):
        check_spanning_tree(np.array([[0, 0], [1, 1]]), 2, 2)
    with pytest.raises(ServerPoolError, match="spanning tree"):
        rooted_tree(np.array([[0, 0]]), 2, 2)
    with pytest.raises(ServerPoolError, match="do not connect"):
        rooted_tree(np.array([[0, 0], [0, 1], [1, 1]])[[0, 1, 1]], 2, 2)


# -- the public API ---------------------------------------------------------------------------
MODULES = [
    "errors",
    "tree",
    "tree_simplex",
    "model",
    "spp",
    "crp",
    "linear",
    "fluid",
    "simulation",
    "diffusion",
    "search",
]


@pytest.mark.parametrize("name", [*MODULES, "instances"])
def test_package_exports_every_public_name_of_its_modules(name):
    module = importlib.import_module(f"queue_routing.serverpools.{name}")
    assert set(module.__all__) <= set(sp.__all__), set(module.__all__) - set(sp.__all__)
    for attr in module.__all__:
        assert getattr(sp, attr) is getattr(module, attr)


def test_package_all_is_complete_and_documented():
    assert sorted(set(sp.__all__)) == sorted(sp.__all__)  # no duplicates
    assert all(hasattr(sp, name) for name in sp.__all__)
    for name in [*MODULES, "highs", "instances", "experiments", "figures"]:
        assert f":mod:`.{name}`" in sp.__doc__, name
    figures = importlib.import_module("queue_routing.serverpools.figures")
    drawn = {
        name
        for name, obj in vars(figures).items()
        if name.endswith("_figure") and getattr(obj, "__module__", None) == figures.__name__
    }
    assert drawn and drawn <= set(figures.__all__)


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_no_module_imports_a_private_name(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            private = [a.name for a in node.names if a.name.startswith("_")]
            assert not private, f"{path.name} imports {private} from {node.module}"
