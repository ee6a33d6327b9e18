"""Validation of the pipeline's configuration, with one-line errors that name the key.

The JSON schema ``workflow/schemas/config.schema.yaml`` types, ranges and describes every
key; :func:`validate_config` checks a config against it and then applies the cross-key rules
a JSON schema cannot express (``first <= last``, ``burn_in < horizon``, ...). The first
problem found is raised as a :class:`ConfigError` whose message is a single line naming the
dotted key, the offending value and what is allowed, e.g.::

    multiskill.instances_per_size: 0 is out of range; allowed: integer in [1, 100000]
        -- Random stable instances per C (10 in the paper).

(printed on one line). The Snakefile calls it before any rule is defined, so an invalid
config never starts a job nor creates an output directory.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import yaml

__all__ = ["ConfigError", "cross_key_problems", "load_schema", "validate_config"]


class ConfigError(ValueError):
    """An invalid configuration value; ``key`` is the dotted path of the offending key."""

    def __init__(self, key: str, message: str):
        self.key = key
        super().__init__(f"{key}: {message}" if key else message)


def load_schema(path: str | Path) -> dict:
    """Read the YAML JSON-schema at ``path``."""
    with open(path, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def _dotted(parts) -> str:
    return ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in parts).replace(".[", "[")


def _number(value) -> str:
    return str(value) if isinstance(value, int) else f"{value:g}"


def _allowed(schema: Mapping) -> str:
    """A short human description of what ``schema`` allows."""
    if "enum" in schema:
        return "one of " + ", ".join(map(repr, schema["enum"]))
    kind = schema.get("type", "value")
    if isinstance(kind, list):
        kind = " or ".join(kind)
    low = schema.get("minimum", schema.get("exclusiveMinimum"))
    high = schema.get("maximum", schema.get("exclusiveMaximum"))
    if low is not None or high is not None:
        left = "(" if "exclusiveMinimum" in schema else "["
        right = ")" if "exclusiveMaximum" in schema else "]"
        low_text = "-inf" if low is None else _number(low)
        high_text = "inf" if high is None else _number(high)
        return f"{kind} in {left}{low_text}, {high_text}{right}"
    if kind == "array" and "items" in schema:
        inner = _allowed(schema["items"])
        size = ""
        if "minItems" in schema or "maxItems" in schema:
            size = f" of {schema.get('minItems', 0)}..{schema.get('maxItems', 'any')} items"
        return f"list{size} of {inner}"
    return str(kind)


def _describe(error: jsonschema.ValidationError) -> ConfigError:
    path = list(error.absolute_path)
    key = _dotted(path)
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    validator = error.validator
    if validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        where = key or "the top level"
        return ConfigError(
            _dotted([*path, extra[0]]) if extra else key,
            f"unknown key in {where} (allowed keys: {', '.join(allowed)})",
        )
    if validator == "required":
        return ConfigError(key, f"missing key ({error.message})")
    value = error.instance
    description = schema.get("description", "").strip().replace("\n", " ")
    allowed = _allowed(schema)
    if validator == "type":
        what = f"has the wrong type ({type(value).__name__})"
    elif validator in {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}:
        what = "is out of range"
    else:
        what = f"is invalid ({error.message})"
    text = f"{value!r} {what}; allowed: {allowed}"
    if description:
        text += f" -- {description}"
    return ConfigError(key, text)


def cross_key_problems(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Rules between keys that the schema cannot express, as ``(key, message)`` pairs.

    Assumes ``config`` already satisfies the schema.
    """
    problems: list[tuple[str, str]] = []
    sizes = config["multiskill"]["sizes"]
    if sizes["first"] > sizes["last"]:
        problems.append(
            ("multiskill.sizes", f"first {sizes['first']} must be <= last {sizes['last']}")
        )
    sp = config["serverpools"]
    for key in ("mu_range", "flow_range"):
        low, high = sp["search"][key]
        if low > high:
            problems.append((f"serverpools.search.{key}", f"low {low} must be <= high {high}"))
    if sp["boundary"]["theta_min"] >= sp["boundary"]["theta_max"]:
        problems.append(
            (
                "serverpools.boundary",
                f"theta_min {sp['boundary']['theta_min']} must be < "
                f"theta_max {sp['boundary']['theta_max']}",
            )
        )
    for part in ("stochastic", "covariance"):
        if sp[part]["burn_in"] >= sp[part]["horizon"]:
            problems.append(
                (
                    f"serverpools.{part}.burn_in",
                    f"{sp[part]['burn_in']} must be < horizon {sp[part]['horizon']}",
                )
            )
    dl = config["deadlines"]
    base = dl["base"]
    if len(base["servers"]) != len(base["service_rates"]):
        problems.append(("deadlines.base", "servers and service_rates must have the same length"))
    else:
        capacity = sum(m * mu for m, mu in zip(base["servers"], base["service_rates"], strict=True))
        if max(dl["sweeps"]["pure_routing"]) >= capacity:
            problems.append(
                (
                    "deadlines.sweeps.pure_routing",
                    f"arrival rates must be < total capacity sum m_k mu_k = {capacity:g}",
                )
            )
    for key in ("servers_range", "rate_range"):
        low, high = dl["large"][key]
        if low > high:
            problems.append((f"deadlines.large.{key}", f"low {low} must be <= high {high}"))
    if dl["large"]["warmup"] >= dl["large"]["horizon"]:
        problems.append(
            (
                "deadlines.large.warmup",
                f"{dl['large']['warmup']} must be < horizon {dl['large']['horizon']}",
            )
        )
    return problems


def validate_config(config: Mapping[str, Any], schema: Mapping | str | Path) -> None:
    """Check ``config`` against ``schema`` and the cross-key rules.

    Parameters
    ----------
    config : mapping
        The merged configuration (default config plus any ``--configfile`` / ``--config``).
    schema : mapping or path
        The JSON schema, or the path of its YAML file.

    Raises
    ------
    ConfigError
        For the first problem found (the most relevant schema error by
        :func:`jsonschema.exceptions.best_match`, then the cross-key rules), with a one-line
        message naming the dotted key.
    """
    if not isinstance(schema, Mapping):
        schema = load_schema(schema)
    validator_class = jsonschema.validators.validator_for(schema)
    validator = validator_class(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(dict(config)))
    if error is not None:
        raise _describe(error)
    for key, message in cross_key_problems(config):
        raise ConfigError(key, message)
