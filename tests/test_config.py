"""The config schema is complete, and invalid configs fail with one line naming the key.

The one-line errors are checked twice: on :func:`queue_routing.workflow.config.validate_config`
directly (many cases, fast) and through ``snakemake`` itself (one case per kind of mistake),
where the run must stop before any job and leave no output behind.
"""

import re
import subprocess

import pytest
import yaml

from _workflow import ROOT, SMOKE, environment, merged_config, snakemake_command
from queue_routing.workflow.config import (
    RENAMED_KEYS,
    REPLACED_KEYS,
    ConfigError,
    load_schema,
    renamed_key_problems,
    replaced_key_problems,
    validate_config,
)

SCHEMA_PATH = ROOT / "workflow" / "schemas" / "config.schema.yaml"
DEFAULT = ROOT / "workflow" / "config" / "default.yaml"


merged = merged_config


def resolve(schema, node):
    ref = node.get("$ref")
    if ref:
        target = schema
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        return target
    return node


def leaves(schema, node=None, path=()):
    """Yield (dotted key, schema node) for every key the schema defines."""
    node = resolve(schema, schema if node is None else node)
    for key, child in node.get("properties", {}).items():
        child = resolve(schema, child)
        yield ".".join((*path, key)), child
        if child.get("type") == "object":
            yield from leaves(schema, child, (*path, key))


SCHEMA = load_schema(SCHEMA_PATH)
KEYS = list(leaves(SCHEMA))


@pytest.mark.parametrize("key,node", KEYS, ids=[k for k, _ in KEYS])
def test_every_key_has_type_range_and_description(key, node):
    assert node.get("description", "").strip(), f"{key} has no description"
    assert "type" in node or "enum" in node, f"{key} has no type"
    if node.get("type") == "object":
        assert node.get("additionalProperties") is False, f"{key} accepts unknown keys"
        assert set(node.get("required", [])) == set(node["properties"]), f"{key}: optional keys"
    numeric = node if node.get("type") in ("number", "integer") else None
    if node.get("type") == "array":
        items = resolve(SCHEMA, node.get("items", {}))
        assert "type" in items or "enum" in items, f"{key}: untyped items"
        if items.get("type") in ("number", "integer"):
            numeric = items
    if numeric is not None:
        assert "minimum" in numeric or "exclusiveMinimum" in numeric, f"{key}: no lower bound"
        assert "maximum" in numeric or "exclusiveMaximum" in numeric, f"{key}: no upper bound"


def test_top_level_schema_rejects_unknown_keys():
    assert SCHEMA["additionalProperties"] is False
    assert set(SCHEMA["required"]) == set(SCHEMA["properties"])


@pytest.mark.parametrize(
    "overlay", [{}, yaml.safe_load(SMOKE.read_text())], ids=["default", "smoke"]
)
def test_shipped_configs_are_valid(overlay):
    validate_config(merged(overlay), SCHEMA)


INVALID = [
    # (overlay, dotted key the message must name, phrase)
    ({"seed": "abc"}, "seed", "wrong type"),
    ({"seed": 1.5}, "seed", "wrong type"),
    ({"seed": -1}, "seed", "out of range"),
    ({"multiskill": {"instances_per_size": 0}}, "multiskill.instances_per_size", "out of range"),
    ({"multiskill": {"instances_per_size": "ten"}}, "multiskill.instances_per_size", "wrong type"),
    ({"multiskill": {"simulation": {"horizon": -5.0}}}, "multiskill.simulation.horizon", "range"),
    (
        {"multiskill": {"fixed_point": {"update_rules": ["gauss"]}}},
        "multiskill.fixed_point.update_rules[0]",
        "one of 'jacobi', 'single'",
    ),
    ({"serverpools": {"search": {"rho": 1.5}}}, "serverpools.search.rho", "out of range"),
    ({"deadlines": {"large": {"clusters": [4, "x"]}}}, "deadlines.large.clusters[1]", "wrong type"),
    ({"multiskil": {"sizes": {}}}, "multiskil", "unknown key"),
    ({"serverpools": {"bogus": 1}}, "serverpools.bogus", "unknown key"),
    (
        {"multiskill": {"sizes": {"first": 1, "last": 5, "step": 1, "stride": 2}}},
        "multiskill.sizes.stride",
        "unknown key",
    ),
    (
        {"multiskill": {"sizes": {"first": 50, "last": 10, "step": 1}}},
        "multiskill.sizes",
        "must be <= last",
    ),
    (
        {"serverpools": {"fluid_limit": {"t_end": 1.0, "record_every": 0.3}}},
        "serverpools.fluid_limit.t_end",
        "whole multiple of record_every",
    ),
    (
        {"serverpools": {"stochastic": {"batches": 7}}},
        "serverpools.stochastic.batches",
        "multiple",
    ),
    (
        {"serverpools": {"covariance": {"horizon": 0.0}}},
        "serverpools.covariance.horizon",
        "out of range",
    ),
    (
        {"serverpools": {"stochastic": {"stationarity_confidence": 0.01}}},
        "serverpools.stochastic.stationarity_confidence",
        "out of range",
    ),
    (
        {"deadlines": {"sweeps": {"pure_routing": [100.0]}}},
        "deadlines.sweeps.pure_routing",
        "total capacity",
    ),
    ({"deadlines": {"base": {"servers": [1, 2, 3]}}}, "deadlines.base.servers", "too long"),
]


@pytest.mark.parametrize(
    "overlay,key,phrase", INVALID, ids=[case[1] + ":" + case[2] for case in INVALID]
)
def test_invalid_config_raises_one_line_naming_the_key(overlay, key, phrase):
    with pytest.raises(ConfigError) as info:
        validate_config(merged(overlay), SCHEMA)
    message = str(info.value)
    assert info.value.key == key
    assert message.startswith(f"{key}: ")
    assert phrase in message
    assert "\n" not in message


def nested(dotted, value):
    """The overlay that sets the dotted key ``dotted`` to ``value``."""
    *parents, leaf = dotted.split(".")
    overlay = {leaf: value}
    for part in reversed(parents):
        overlay = {part: overlay}
    return overlay


def lookup(config, dotted):
    for part in dotted.split("."):
        config = config[part]
    return config


SCHEMA_KEYS = {key for key, _ in KEYS}


@pytest.mark.parametrize("old,new", sorted(RENAMED_KEYS.items()), ids=sorted(RENAMED_KEYS))
def test_renamed_key_stops_with_one_line_naming_the_new_key(old, new):
    assert new in SCHEMA_KEYS and old not in SCHEMA_KEYS
    value = lookup(merged(), new)  # the old key with the value its successor has
    with pytest.raises(ConfigError) as info:
        validate_config(merged(nested(old, value)), SCHEMA)
    assert info.value.key == old
    assert str(info.value) == f"{old}: renamed to {new}"
    # the rename is reported before anything else, even an otherwise invalid config
    with pytest.raises(ConfigError, match=f"^{old}: renamed to {new}$"):
        validate_config(merged(nested(old, value), {"seed": "abc"}), SCHEMA)


def test_renamed_keys_are_found_anywhere_and_only_when_present():
    assert renamed_key_problems(merged()) == []
    assert renamed_key_problems({"serverpools": 3}) == []  # no schema assumed
    both = merged(
        nested("serverpools.covariance.burn_in", 1.0), nested("serverpools.fluid.stable.t_max", 2)
    )
    assert [key for key, _ in renamed_key_problems(both)] == [
        "serverpools.covariance.burn_in",
        "serverpools.fluid.stable.t_max",
    ]


@pytest.mark.parametrize("old", sorted(REPLACED_KEYS), ids=sorted(REPLACED_KEYS))
def test_replaced_key_stops_with_one_line_saying_what_to_set(old):
    assert old not in SCHEMA_KEYS
    with pytest.raises(ConfigError) as info:
        validate_config(merged(nested(old, 50.0), {"seed": "abc"}), SCHEMA)
    assert info.value.key == old
    message = str(info.value)
    assert message == f"{old}: {REPLACED_KEYS[old]}" and "\n" not in message
    named = re.findall(r"serverpools\.[\w.]+", REPLACED_KEYS[old])
    assert named and all(key in SCHEMA_KEYS for key in named)  # points at keys that exist
    assert replaced_key_problems(merged()) == []


def test_range_errors_state_the_allowed_range_and_meaning():
    with pytest.raises(ConfigError) as info:
        validate_config(merged({"multiskill": {"instances_per_size": 0}}), SCHEMA)
    assert "integer in [1, 100000]" in str(info.value)
    assert "Random stable instances per C" in str(info.value)


@pytest.mark.parametrize(
    "text,key,phrase",
    [
        ("seed: abc\n", "seed", "wrong type"),
        (
            "multiskill:\n  instances_per_size: 0\n",
            "multiskill.instances_per_size",
            "out of range",
        ),
        ("deadlines:\n  larg: {}\n", "deadlines.larg", "unknown key"),
        (
            "serverpools:\n  stochastic:\n    window: 60.0\n",
            "serverpools.stochastic.window",
            "renamed to serverpools.stochastic.horizon",
        ),
        (
            "serverpools:\n  covariance:\n    t_end: 1000.0\n",
            "serverpools.covariance.t_end",
            "replaced by serverpools.covariance.horizon",
        ),
        ("deadlines:\n  exact:\n    tol: .nan\n", "deadlines.exact.tol", "not a finite number"),
    ],
    ids=["wrong-type", "out-of-range", "unknown-key", "renamed-key", "replaced-key", "nan"],
)
def test_snakemake_stops_before_any_job_with_one_line(tmp_path, text, key, phrase):
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    proc = subprocess.run(
        snakemake_command(tmp_path, "--configfile", str(bad), cores=1),
        capture_output=True,
        text=True,
        env=environment(),
        check=False,
    )
    assert proc.returncode != 0
    # Snakemake itself may add an informational line ("Config file ... is extended ...").
    errors = [
        line
        for line in proc.stderr.splitlines()
        if any(word in line for word in ("invalid config", "Error", "Traceback", "File "))
    ]
    assert len(errors) == 1, proc.stderr
    assert errors[0].startswith(f"invalid config: {key}: "), errors[0]
    assert phrase in errors[0], errors[0]
    assert "Traceback" not in proc.stdout + proc.stderr
    for name in ("results", "logs", "figures"):
        assert not (tmp_path / name).exists(), name


def _numeric_leaves(node, path=()):
    """Dotted paths (as tuples) of every number in a config, list items included."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _numeric_leaves(value, (*path, key))
    elif isinstance(node, list):
        for k, value in enumerate(node):
            yield from _numeric_leaves(value, (*path, k))
    elif isinstance(node, int | float) and not isinstance(node, bool):
        yield path


NUMERIC = list(_numeric_leaves(yaml.safe_load(DEFAULT.read_text())))


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")], ids=str)
def test_every_numeric_key_refuses_non_finite_values(bad):
    """A YAML .nan/.inf passes a JSON schema's type and range checks; every key refuses it."""
    schema = load_schema(SCHEMA_PATH)
    assert len(NUMERIC) > 60
    for path in NUMERIC:
        config = merged()
        node = config
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = bad
        with pytest.raises(ConfigError) as info:
            validate_config(config, schema)
        text = str(info.value)
        assert "\n" not in text and "not a finite number" in text
        dotted = ".".join(str(p) for p in path if not isinstance(p, int))
        assert text.startswith(dotted), (path, text)


def test_nested_command_line_overrides_reach_the_rules_as_numbers(tmp_path):
    """``--config 'part={...}'`` hands nested numbers over as strings; they are converted."""
    override = 'multiskill={"simulation": {"horizon": 31.5, "replications": 4}}'
    proc = subprocess.run(
        snakemake_command(
            tmp_path, "-n", "--configfile", str(SMOKE), "--config", override, cores=1
        ),
        capture_output=True,
        text=True,
        env=environment(),
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "invalid config" not in proc.stderr
    config = merged(yaml.safe_load(SMOKE.read_text()))
    config["multiskill"]["simulation"].update(horizon="31.5", replications="4")
    validate_config(config, load_schema(SCHEMA_PATH))  # converts in place
    assert config["multiskill"]["simulation"]["horizon"] == 31.5
    assert config["multiskill"]["simulation"]["replications"] == 4
    config["multiskill"]["simulation"]["replications"] = "four"
    with pytest.raises(ConfigError, match=r"multiskill\.simulation\.replications: 'four'"):
        validate_config(config, load_schema(SCHEMA_PATH))


def test_slow_config_is_valid_and_only_scales_part_c():
    """workflow/config/slow.yaml (Part C up to r = 1e7) merges over the default."""
    slow = yaml.safe_load((ROOT / "workflow" / "config" / "slow.yaml").read_text())
    assert set(slow) == {"serverpools"}
    config = merged(slow)
    validate_config(config, SCHEMA)
    assert max(config["serverpools"]["stochastic"]["r"]) == 10**7
    assert max(config["serverpools"]["fluid_limit"]["r"]) == 10**7
