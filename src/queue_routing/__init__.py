"""queue-routing: routing and load balancing in multi-server queueing systems.

Subpackages, one per reproduced paper:

- :mod:`queue_routing.multiskill` -- Miguelez, Doncel, Prabhu (2022), multi-skilled servers
  with Bernoulli routing.
"""

__version__ = "0.1.0"
