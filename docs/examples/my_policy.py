"""Two index policies of one's own (docs/your-own-policy.md; docs/README.md#your-own-policy).

index(server, jobs, instance) -> float: smaller is preferred; ``jobs`` is the number of
jobs the arriving job finds at ``server`` (not counting itself).
"""

import math

from queue_routing.multiskill.simulation import arrival_rates

_solved = {}  # lambda* of the last instance: solved once, not once per table entry


def pi_damped(server, jobs, instance):
    """Part A: PI's index c_j (x+1)/(mu_j - lambda_j*) with the rate damped by x/(x+1):
    a server found empty is charged IO's c_j/mu_j, a long queue PI's weight."""
    if _solved.get("instance") is not instance:
        _solved.update(instance=instance, rates=arrival_rates(instance))
    lam = _solved["rates"][server] * jobs / (jobs + 1)
    return instance.cost[server] * (jobs + 1) / (instance.mu[server] - lam)


def miss_guess(server, jobs, instance):
    """Part B: a guess of the miss probability, exp(-deadline / mean response time) with
    the mean response time of an FCFS M/M/m queue found with x jobs."""
    cluster = instance.clusters[server]
    m, mu = cluster.servers, cluster.rate
    response = max(0, jobs - m + 1) / (m * mu) + 1.0 / mu
    return math.exp(-instance.deadline.expected / response)
