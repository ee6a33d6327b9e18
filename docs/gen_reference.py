"""The documentation's generated references: the command line, the configuration, the API.

Every page here is made from the code at build time (``docs/hooks/reference.py`` adds them to
the MkDocs site), so the references cannot drift from what they describe:

- :func:`cli_reference` -- every subcommand of ``queue-routing``, from the argument parser
  itself (:func:`queue_routing.cli.build_parser`): its usage, and each option with its
  argument, default and help;
- :func:`config_reference` -- every key of the pipeline's configuration, from the JSON schema
  ``workflow/schemas/config.schema.yaml`` (type and range, description) and the default from
  ``workflow/config/default.yaml``; the same text is committed as ``config/README.md``, the
  workflow catalog's description of the configuration (``python docs/gen_reference.py``
  rewrites it; ``--check`` fails if it is out of date, as ``tests/test_docs.py`` does);
- :func:`api_pages` -- one page per part and one for the shared floor, listing every public
  name (a subpackage's ``__all__``, its lazy exports) for mkdocstrings to render from its
  docstring.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "workflow" / "schemas" / "config.schema.yaml"
DEFAULTS = ROOT / "workflow" / "config" / "default.yaml"
CONFIG_README = ROOT / "config" / "README.md"

#: The subpackages of the parts, with the title of their API page.
PARTS = {
    "multiskill": "Part A: multi-skilled servers (queue_routing.multiskill)",
    "deadlines": "Part B: soft real-time jobs on multiclusters (queue_routing.deadlines)",
    "serverpools": "Part C: large flexible server pools (queue_routing.serverpools)",
}
#: The shared floor's public modules (the package docstring of ``queue_routing`` lists them).
SHARED = (
    "seeding",
    "rng",
    "stats",
    "paired",
    "checks",
    "errors",
    "user_policy",
    "labels",
    "io",
    "plotting",
    "progress",
    "signals",
)
#: The width the command's help is formatted to (argparse reads it from ``COLUMNS``).
HELP_WIDTH = 80


# -- the command line -------------------------------------------------------------------------
@contextlib.contextmanager
def _columns(width: int) -> Iterator[None]:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(width)
    try:
        yield
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old


def _cell(text: object) -> str:
    """``text`` fit for one cell of a Markdown table."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for action in parser._actions:  # argparse keeps no public list of a parser's arguments
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                metavar = action.metavar
                if metavar is None and action.choices is not None:
                    metavar = "{" + ",".join(map(str, action.choices)) + "}"
                name += f" {metavar or action.dest.upper()}"
        else:
            name = action.metavar or action.dest
        params = {**vars(action), "prog": parser.prog}
        if params.get("choices") is not None:
            params["choices"] = ", ".join(map(str, params["choices"]))
        text = (action.help or "") % params
        default = action.default
        shown = (
            ""
            if default is None
            or default is argparse.SUPPRESS
            or not action.option_strings
            or action.nargs == 0
            else f"`{default}`"
        )
        rows.append(f"| `{_cell(name)}` | {_cell(shown)} | {_cell(text)} |")
    return rows


def _command_section(
    parser: argparse.ArgumentParser, level: int, summary: str | None = None
) -> list[str]:
    with _columns(HELP_WIDTH):
        usage = parser.format_usage().strip()
    lines = [f"{'#' * level} `{parser.prog}`", ""]
    text = parser.description or summary
    if text:
        lines += [" ".join(text.split()), ""]
    lines += ["```text", usage, "```", ""]
    rows = _option_rows(parser)
    if rows:
        lines += ["| argument | default | meaning |", "|---|---|---|", *rows, ""]
    return lines


def _subcommands(
    parser: argparse.ArgumentParser,
) -> dict[str, tuple[argparse.ArgumentParser, str | None]]:
    """A parser's subcommands: ``{name: (parser, its one-line help)}``."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            return {name: (sub, helps.get(name)) for name, sub in action.choices.items()}
    return {}


def cli_reference() -> str:
    """The command-line reference (Markdown): every subcommand of ``queue-routing``, its usage
    and options, from the argument parser."""
    from queue_routing.cli import build_parser

    parser = build_parser()
    lines = [
        "# Command line",
        "",
        "Generated from the argument parser of `queue-routing` (`queue_routing.cli`). Every "
        "command reads one JSON instance (a path, or `-` for standard input) and prints one JSON "
        "object; `queue-routing PART COMMAND --help` prints the same text. Errors are one line on "
        "standard error; the exit status is 0 on success, 1 for an instance or result the command "
        "refuses, 2 for a usage error, 3 for an internal error, 130 / 143 when interrupted.",
        "",
        *_command_section(parser, 2),
    ]
    for part_parser, part_help in _subcommands(parser).values():
        lines += _command_section(part_parser, 2, part_help)
        for command, command_help in _subcommands(part_parser).values():
            lines += _command_section(command, 3, command_help)
    return "\n".join(lines).rstrip() + "\n"


# -- the configuration ------------------------------------------------------------------------
def _resolve(node: Mapping[str, Any], schema: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = node.get("$ref")
    if ref is None:
        return node
    if not ref.startswith("#/"):
        raise ValueError(f"unsupported $ref {ref!r}")
    target: Any = schema
    for part in ref[2:].split("/"):
        target = target[part]
    return {**target, **{k: v for k, v in node.items() if k != "$ref"}}


def _number(x: object) -> str:
    if isinstance(x, float) and x.is_integer() and abs(x) >= 1e6:
        return f"{x:.0e}".replace("e+0", "e").replace("e+", "e")
    return str(x)


def _range(node: Mapping[str, Any]) -> str:
    low = node.get("minimum")
    low_open = node.get("exclusiveMinimum")
    high = node.get("maximum")
    high_open = node.get("exclusiveMaximum")
    if low is None and low_open is None and high is None and high_open is None:
        return ""
    left = (
        f"[{_number(low)}"
        if low is not None
        else (f"({_number(low_open)}" if low_open is not None else "(-inf")
    )
    right = (
        f"{_number(high)}]"
        if high is not None
        else (f"{_number(high_open)})" if high_open is not None else "inf)")
    )
    return f" in {left}, {right}"


def type_text(node: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    """A short description of the values a schema node allows (type, range, choices)."""
    node = _resolve(node, schema)
    if "enum" in node:
        return "one of " + ", ".join(f"`{v}`" for v in node["enum"])
    if "anyOf" in node or "oneOf" in node:
        options = node.get("anyOf") or node.get("oneOf")
        return " or ".join(type_text(option, schema) for option in options)
    if "pattern" in node and "type" not in node:
        return f"a string matching `{node['pattern']}`"
    kind = node.get("type")
    if kind == "array":
        items = type_text(node.get("items", {}), schema)
        size = []
        if node.get("minItems", 0) > 0:
            size.append(f"at least {node['minItems']}")
        if "maxItems" in node:
            size.append(f"at most {node['maxItems']}")
        extra = f" ({', '.join(size)})" if size else ""
        unique = "distinct " if node.get("uniqueItems") else ""
        return f"list of {unique}items{extra}, each {items}"
    if kind == "object":
        return "mapping"
    if isinstance(kind, list):
        return " or ".join(kind)
    text = {"integer": "integer", "number": "number", "string": "string", "boolean": "boolean"}
    out = text.get(kind, str(kind) if kind else "any")
    if kind == "string" and "pattern" in node:
        out += f" matching `{node['pattern']}`"
    if kind == "string" and node.get("minLength") == 1:
        out = "non-empty " + out
    elif kind == "string" and "minLength" in node:
        out += f" of at least {node['minLength']} characters"
    return out + _range(node)


def _default_text(value: object) -> str:
    if value is _MISSING:
        return ""
    return "`" + json.dumps(value, ensure_ascii=False) + "`"


_MISSING = object()


def _walk(
    node: Mapping[str, Any], schema: Mapping[str, Any], path: str, defaults: object, out: list
) -> None:
    """Depth first, in the schema's order: each mapping's leaf keys, then its sub-mappings."""
    node = _resolve(node, schema)
    properties = node.get("properties", {})
    leaves, sections = [], []
    for key, child in properties.items():
        child = _resolve(child, schema)
        value = defaults.get(key, _MISSING) if isinstance(defaults, Mapping) else _MISSING
        dotted = f"{path}.{key}" if path else key
        if child.get("type") == "object" and "properties" in child:
            sections.append((dotted, child, value))
        else:
            leaves.append(
                f"| `{dotted}` | {_cell(type_text(child, schema))} | "
                f"{_cell(_default_text(value))} | {_cell(child.get('description', ''))} |"
            )
    if leaves:
        if path:
            description = " ".join(str(node.get("description", "")).split())
            out += [f"{'#' * min(2 + path.count('.'), 6)} `{path}`", ""]
            if description:
                out += [description, ""]
        out += ["| key | values | default | meaning |", "|---|---|---|---|", *leaves, ""]
    elif path:
        description = " ".join(str(node.get("description", "")).split())
        out += [f"{'#' * min(2 + path.count('.'), 6)} `{path}`", ""]
        if description:
            out += [description, ""]
    for dotted, child, value in sections:
        _walk(child, schema, dotted, value, out)


def config_reference(schema_path: Path = SCHEMA, defaults_path: Path = DEFAULTS) -> str:
    """The configuration reference (Markdown): every key of the schema, depth first, with the
    values it allows, its default and its meaning."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    defaults = yaml.safe_load(Path(defaults_path).read_text())
    out = [
        "# Configuration",
        "",
        "<!-- Generated by docs/gen_reference.py from workflow/schemas/config.schema.yaml and "
        "workflow/config/default.yaml: edit those, then run `python docs/gen_reference.py`. -->",
        "",
        "Every key of the pipeline's configuration, generated from its JSON schema "
        "(`workflow/schemas/config.schema.yaml`, which the workflow checks every config "
        "against before any job starts) with the defaults of `workflow/config/default.yaml`. "
        "A config given with `--configfile` (or, when the workflow is deployed as a module, "
        "the deploying workflow's `config/config.yaml`) sets only the keys it changes; every "
        "other key keeps its default. `workflow/config/smoke.yaml` is a small example (the "
        "whole pipeline in about a minute), `workflow/config/large.yaml` the publication-scale "
        "study. An unknown key, a value out of range or a renamed key stops the run with one "
        "line naming the key.",
        "",
        " ".join(str(schema.get("description", "")).split()),
        "",
    ]
    _walk(schema, schema, "", defaults, out)
    return "\n".join(out).rstrip() + "\n"


# -- the API ----------------------------------------------------------------------------------
def _where(package: str) -> dict[str, list[str]]:
    """The public names of a lazy subpackage by the submodule that defines them, in the
    order of its ``_EXPORTS``."""
    module = importlib.import_module(package)
    by_module: dict[str, list[str]] = {}
    for name in module.__all__:
        obj = getattr(module, name)
        owner = getattr(obj, "__module__", None)
        if not (isinstance(owner, str) and owner.startswith(package + ".")):
            owner = _owner_by_exports(module, name)
        by_module.setdefault(owner, []).append(name)
    exports = [package + m for m in module._EXPORTS]
    order = {m: i for i, m in enumerate(exports)}
    return dict(sorted(by_module.items(), key=lambda item: (order.get(item[0], 1e9), item[0])))


def _owner_by_exports(module: Any, name: str) -> str:
    from queue_routing._lazy import ALL, module_all

    for sub, names in module._EXPORTS.items():
        listed = module_all(module.__name__, sub) if names == ALL else names
        if name in listed:
            return module.__name__ + sub
    raise LookupError(f"{module.__name__}.{name}: no submodule exports it")


def _part_page(part: str, title: str) -> str:
    package = f"queue_routing.{part}"
    lines = [
        f"# {title}",
        "",
        f"Every public name of `{package}` (its `__all__`), importable from the package "
        f"(`from {package} import NAME`), grouped by the submodule that defines it. "
        f"The mathematics is in [{part}.md](../../{part}.md).",
        "",
        f"::: {package}",
        "    options:",
        "      members: false",
        "      show_root_heading: false",
        "      show_root_toc_entry: false",
        "",
    ]
    namespace = importlib.import_module(package)
    for module, names in _where(package).items():
        lines += [f"## `{module}`", ""]
        values = [n for n in names if not callable(getattr(namespace, n))]
        if values:  # constants: no docstring of their own for mkdocstrings to render
            lines += ["| constant | value |", "|---|---|"]
            lines += [
                f"| `{name}` | `{_cell(_short_repr(getattr(namespace, name)))}` |"
                for name in sorted(values, key=str.lower)
            ]
            lines.append("")
        for name in sorted(set(names) - set(values), key=str.lower):
            lines += [f"::: {module}.{name}", "    options:", "      heading_level: 3", ""]
    return "\n".join(lines).rstrip() + "\n"


def _short_repr(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shared_page() -> str:
    lines = [
        "# Shared floor (queue_routing)",
        "",
        "What every part uses and none copies: random streams, intervals, paired comparisons, "
        "argument checks and errors, your own policy, output and figures. The conventions "
        "behind them are in the [overview](../../README.md).",
        "",
        "::: queue_routing",
        "    options:",
        "      members: false",
        "      show_root_heading: false",
        "      show_root_toc_entry: false",
        "",
    ]
    for module in SHARED:
        lines += [f"::: queue_routing.{module}", "    options:", "      heading_level: 2", ""]
    return "\n".join(lines).rstrip() + "\n"


def api_pages() -> dict[str, str]:
    """The API reference pages, by their path under the documentation folder."""
    pages = {"reference/api/shared.md": _shared_page()}
    for part, title in PARTS.items():
        pages[f"reference/api/{part}.md"] = _part_page(part, title)
    return pages


def pages() -> dict[str, str]:
    """Every generated page of the site, by its path under the documentation folder."""
    return {
        "reference/cli.md": cli_reference(),
        "reference/config.md": config_reference(),
        **api_pages(),
    }


def main(argv: list[str] | None = None) -> int:
    """Write ``config/README.md``; with ``--check``, only say whether it is current."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 if config/README.md is stale")
    args = parser.parse_args(argv)
    text = config_reference()
    if args.check:
        current = CONFIG_README.is_file() and CONFIG_README.read_text() == text
        if not current:
            print(f"{CONFIG_README.relative_to(ROOT)} is out of date: run python {__file__}")
        return 0 if current else 1
    CONFIG_README.parent.mkdir(exist_ok=True)
    CONFIG_README.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
