"""Progress within one long replication: the kernels store how far they are, and
``progress.observe`` reports the fraction from a thread of its own while they run.

No wall clock decides anything here: a fake kernel hands over to the observer thread by
events (it moves its clock, then waits until the observer has reported it), and the checks
are on the content and order of the messages; the real kernels are checked to store their
clock (the last value stored lies within the run) and to give the same numbers with and
without an observer (a second run of the same replications).
"""

from __future__ import annotations

import json
import logging
import re
import threading

import numpy as np
import pytest
from _cli_inputs import CLUSTERS, TABLE1

from queue_routing import progress as progress_module
from queue_routing.deadlines import Instance, policies
from queue_routing.deadlines import simulation as b_simulation
from queue_routing.multiskill import Instance as AInstance
from queue_routing.multiskill import simulate as a_simulate
from queue_routing.multiskill import simulation as a_simulation
from queue_routing.progress import Progress, observe
from queue_routing.serverpools import ServerPoolSystem, solve_spp
from queue_routing.serverpools import simulation as c_simulation
from queue_routing.serverpools import time_average as c_time_average


class Recording(Progress):
    """A Progress that also signals each report of a fraction (for the handshake)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reported = threading.Event()
        self.fractions: list[float] = []

    def within(self, fraction, units=1):
        super().within(fraction, units)
        self.fractions.append(fraction)
        self.reported.set()


def _percentages(messages):
    return [int(m.group(1)) for m in (re.search(r", (\d+)%, ", s) for s in messages) if m]


def test_fake_slow_replication_logs_its_fractions_in_order(monkeypatch, caplog):
    real = b_simulation._kernel

    def slow(*args):
        clock, t_end = args[-1], args[13]
        calls.append(t_end)
        for share in (0.25, 0.5, 0.75) if len(calls) == 1 else ():
            progress.reported.clear()
            clock[0] = share * t_end
            assert progress.reported.wait(30.0)  # the observer has seen this value
            while progress.fractions[-1] != share:  # it may have reported the earlier one
                progress.reported.clear()
                assert progress.reported.wait(30.0)
        return real(*args)

    calls = []
    monkeypatch.setattr(b_simulation, "_kernel", slow)
    log = logging.getLogger("test-within")
    progress = Recording(2, "pi", logger=log, within_every=0.001)
    inst = Instance.from_dict(CLUSTERS)
    with caplog.at_level(logging.INFO, logger="test-within"):
        policies.simulate_policy(inst, "pi", horizon=50.0, warmup=5.0, replications=2, seed=1,
                                 progress=progress)  # fmt: skip
    messages = [r.getMessage() for r in caplog.records]
    # the first replication: its fractions in order, then the line of its end
    end = next(i for i, m in enumerate(messages) if re.match(r"pi: replication 1 of 2, elapsed", m))
    shown = _percentages(messages[:end])
    assert {25, 50, 75} <= set(shown) and shown == sorted(shown)
    assert all(m.startswith("pi: replication 1 of 2, ") for m in messages[:end])
    assert "about" in next(m for m in messages if ", 25%, " in m)  # an estimate of what is left
    assert re.match(r"pi: replication 2 of 2, elapsed [\d.]+ s$", messages[-1])


def test_several_units_under_way_are_named_as_a_range():
    p = Progress(10, "jsq", unit="run", logger=logging.getLogger("x"))
    p.done = 4
    msg = p.message(fraction=0.5, units=3)
    assert msg.startswith("jsq: run 5-7 of 10, 50%, elapsed ")
    assert "s left" in msg


def test_no_observer_thread_without_a_progress_that_reports_fractions():
    before = threading.active_count()
    for progress in (None, lambda: None):
        with observe(progress, 10.0) as clock:
            assert threading.active_count() == before
            assert clock.shape == (1,) and clock[0] == 0.0


def _kept_clocks(monkeypatch, module):
    kept = []
    real = progress_module.observe

    def keeping(*args, **kwargs):
        cm = real(*args, **kwargs)

        class Keep:
            def __enter__(self):
                kept.append(cm.__enter__())
                return kept[-1]

            def __exit__(self, *exc):
                return cm.__exit__(*exc)

        return Keep()

    monkeypatch.setattr(module, "observe", keeping)
    return kept


def test_part_b_kernel_stores_its_time_and_the_observer_changes_no_result(monkeypatch):
    kept = _kept_clocks(monkeypatch, b_simulation)
    inst = Instance.from_dict(CLUSTERS)
    run = {"horizon": 60000.0, "warmup": 1000.0, "replications": 2, "seed": 7}
    quiet = policies.simulate_policy(inst, "pi", **run)
    watched = policies.simulate_policy(
        inst, "pi", progress=Progress(2, "pi", within_every=0.001), **run
    )
    assert json.dumps(quiet.to_dict()) == json.dumps(watched.to_dict())
    # more than 2^16 events per replication: each stored a time within the run
    assert len(kept) == 4 and all(0.0 < c[0] < 61000.0 for c in kept)


def test_part_c_kernel_stores_its_time(monkeypatch):
    kept = _kept_clocks(monkeypatch, c_simulation)
    sol = solve_spp(ServerPoolSystem([1.2], [3.0], [[0.8]]))
    args = {"r": 500, "horizon": 100.0, "record_every": 10.0, "seed": 3, "keys": ("t",)}
    quiet = c_simulation.simulate(sol, **args)
    watched = c_simulation.simulate(sol, progress=Progress(1, "c", within_every=0.001), **args)
    assert np.array_equal(quiet.deviation, watched.deviation) and quiet.events == watched.events
    assert quiet.events > 2**16 and len(kept) == 2 and all(0.0 < c[0] <= 100.0 for c in kept)


def test_part_a_kernel_stores_its_step(monkeypatch):
    kept = _kept_clocks(monkeypatch, a_simulation)
    inst = AInstance.from_dict(TABLE1)
    run = {"horizon": 3000.0, "replications": 2, "seed": 5}
    quiet = a_simulate(inst, "jsq", **run)
    watched = a_simulate(inst, "jsq", progress=Progress(2, "jsq", within_every=0.001), **run)
    assert json.dumps(quiet.to_dict()) == json.dumps(watched.to_dict())
    assert len(kept) == 4 and all(c[0] > 0 for c in kept)
    assert all(c[0] % 2**16 == 0 for c in kept)  # a step number, stored every 2^16 steps


@pytest.mark.parametrize("stream", ["tty", "file"])
def test_terminal_line_shows_the_fraction(stream, tmp_path):
    class Tty:
        def __init__(self):
            self.text = ""

        def write(self, s):
            self.text += s

        def flush(self):
            pass

        def isatty(self):
            return stream == "tty"

    out = Tty()
    p = Progress(2, "bs", stream=out)
    p.within(0.37)
    assert (", 37%, " in out.text) is (stream == "tty")


def test_part_a_general_kernel_stores_its_time(monkeypatch):
    from queue_routing.multiskill import general

    kept = _kept_clocks(monkeypatch, general)
    inst = AInstance.from_dict(TABLE1)
    run = {"horizon": 1000.0, "replications": 2, "seed": 5, "job_sizes": "lognormal:4"}
    quiet = a_simulate(inst, "jsq", **run)
    watched = a_simulate(inst, "jsq", progress=Progress(2, "jsq", within_every=0.001), **run)
    assert json.dumps(quiet.to_dict()) == json.dumps(watched.to_dict())
    assert len(kept) == 4 and all(0.0 < c[0] <= quiet.horizon + quiet.warmup for c in kept)


def test_part_c_time_average_reports_each_replication_and_its_fractions():
    """Part C's CLI entry point (``time_average``) hands its progress to the kernel: one
    unit per replication, and whatever fractions the observer saw lie in [0, 1]; the estimate
    is the one computed without a progress (same streams)."""
    system = ServerPoolSystem([1.2], [3.0], [[0.8]])
    progress = Recording(3, "c", logger=logging.getLogger("c"), within_every=1e-3)
    with_progress = c_time_average(system, 200, horizon=50.0, replications=3, seed=4,
                                   progress=progress)  # fmt: skip
    silent = c_time_average(system, 200, horizon=50.0, replications=3, seed=4)
    assert progress.done == 3
    assert all(0.0 <= f <= 1.0 for f in progress.fractions)
    assert json.dumps(with_progress.to_dict()) == json.dumps(silent.to_dict())
