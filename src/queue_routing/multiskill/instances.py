"""Instances of the paper: Table 1 (Sec. 6.3) and the random stable instances of Fig. 7."""

from __future__ import annotations

import numpy as np

from ..seeding import rng_for
from .model import Instance, Partition, stability_margin

__all__ = [
    "TABLE1",
    "random_instance",
    "random_instances",
    "table1",
    "table1_initial_partitions",
]

#: Table 1 of the paper: mu_j, c_j for j = 0..5 and eta_i for classes 1..5.
TABLE1 = {
    "mu": [25.0, 34.0, 38.0, 39.0, 13.0, 27.0],
    "cost": [5.0, 10.0, 11.0, 6.0, 86.0, 14.0],
    "eta": [28.0, 33.0, 20.0, 12.0, 24.0],
}

_MAX_DRAWS = 10_000


def table1() -> Instance:
    """The five-class instance of the paper's Table 1 (Sec. 6.3, Fig. 6)."""
    return Instance(**TABLE1, name="table1")


def table1_initial_partitions() -> dict[str, Partition]:
    """The three initial partitions of Fig. 6."""
    return {
        "all C_d": Partition.from_sets(5, dedicated=[1, 2, 3, 4, 5]),
        "C_d={1,3,4}, C_b={2,5}": Partition.from_sets(5, dedicated=[1, 3, 4], both=[2, 5]),
        "C_d={1,2,3,4}, C_b={5}": Partition.from_sets(5, dedicated=[1, 2, 3, 4], both=[5]),
    }


def _draw(n_classes: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One draw of the authors' generator (Sec. 6.3, as in their code)."""
    cost = np.round(rng.uniform(1.0, 90.0, size=n_classes + 1))
    mu_dedicated = np.ceil(rng.uniform(10.0, 40.0, size=n_classes))
    eta = np.round(rng.uniform(1.0, 20.0, size=n_classes))
    m = float(np.clip(eta - mu_dedicated, 0.0, None).sum())
    if m == 0.0:
        m = float(mu_dedicated.min())
    mu0 = np.ceil(rng.uniform(m, m * rng.uniform(1.01, 4.0)))
    return np.concatenate([[mu0], mu_dedicated]), cost, eta


def random_instance(n_classes: int, seed: int, index: int) -> Instance:
    """Random stable instance ``index`` with ``n_classes`` classes (Fig. 7's distribution).

    Drawn from the stream keyed by ``(seed, "multiskill-instance", n_classes, index)``,
    so any instance can be regenerated alone. Draws that are not strictly stable
    (Proposition 1) or have a zero intensity are rejected and redrawn.
    """
    if n_classes < 1:
        raise ValueError(f"n_classes must be >= 1, got {n_classes}")
    rng = rng_for(seed, "multiskill-instance", n_classes, index)
    for _ in range(_MAX_DRAWS):
        mu, cost, eta = _draw(n_classes, rng)
        if np.all(eta > 0) and stability_margin(mu, eta) > 0:
            return Instance(mu=mu, cost=cost, eta=eta, name=f"C{n_classes}-i{index}")
    raise RuntimeError(f"no stable instance after {_MAX_DRAWS} draws")  # pragma: no cover


def random_instances(n_classes: int, count: int, seed: int) -> list[Instance]:
    """Instances ``0..count-1`` of size ``n_classes`` (see :func:`random_instance`)."""
    return [random_instance(n_classes, seed, k) for k in range(count)]
