"""Inputs shared by the tests that run the command in a subprocess: the paper's Table 1
(Part A) and a small two-cluster instance (Part B) as their JSON objects, and the command."""

import sys

TABLE1 = {
    "mu": [25, 34, 38, 39, 13, 27],
    "cost": [5, 10, 11, 6, 86, 14],
    "eta": [28, 33, 20, 12, 24],
}
CLUSTERS = {
    "arrival_rate": 3.0,
    "servers": [3, 2],
    "service_rates": [1.0, 0.8],
    "rejection_cost": 2.0,
    "deadline": {"kind": "constant", "t": 1.5},
}
COMMAND = [sys.executable, "-m", "queue_routing.cli"]
