"""How policies are named in tables, figures and the README (Parts A and B).

One table for the whole project: the tables and captions written by the pipeline and the
numbers the README quotes (:mod:`queue_routing.workflow.summary`) use :data:`POLICY_LABELS`;
figures short of room use :data:`POLICY_SHORT`. A user policy ``path.py:name`` is labelled by
its function's name (:func:`label`).

>>> label("pi"), label("led"), short_label("led"), label("docs/examples/my_policy.py:damped")
('PI', 'least expected delay', 'LED', 'damped')
"""

from __future__ import annotations

from .user_policy import policy_label

__all__ = ["POLICY_LABELS", "POLICY_SHORT", "label", "short_label"]

#: Policy names as tables and the README write them: Part A's routing policies
#: (``multiskill.POLICIES``), Part B's (``deadlines.POLICIES``).
POLICY_LABELS = {
    "bernoulli": "Bernoulli",
    "jsq": "JSQ",
    "led": "least expected delay",
    "io": "IO",
    "pi": "PI",
    "rb": "RB",
    "bs": "BS",
    "optimal": "optimal",
}

#: The same, abbreviated for tick labels.
POLICY_SHORT = {**POLICY_LABELS, "bernoulli": "Bern.", "led": "LED"}


def label(policy: str) -> str:
    """The label of ``policy`` (:data:`POLICY_LABELS`), or a user policy's function name."""
    return POLICY_LABELS.get(policy, policy_label(policy))


def short_label(policy: str) -> str:
    """The tick label of ``policy`` (:data:`POLICY_SHORT`), or a user policy's function name."""
    return POLICY_SHORT.get(policy, policy_label(policy))
