"""Griffe extension (mkdocstrings' ``extensions`` option): the docstrings' reST habits, read
as Markdown.

The docstrings are numpy-style and are also read by ``help()``, doctest and the console, so
they keep two reST habits that Markdown would misread:

- a doctest (``>>>`` lines and the output under them) outside an ``Examples`` section would
  be a paragraph, its ``x[0][1]`` a reference link: each such block is fenced as Python;
- a Sphinx role (``:func:`~queue_routing.multiskill.solve```, ``:mod:`.model```) would be
  shown as typed: it becomes a code span of the name (its last component after ``~``).
"""

from __future__ import annotations

import re

import griffe

_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|obj|exc|const|py:\w+):`(~?)([^`]+)`")


def _role(match: re.Match) -> str:
    tilde, target = match.groups()
    if tilde:
        target = target.rsplit(".", 1)[-1]
    return f"`{target}`"


def markdown_docstring(text: str) -> str:
    """``text`` with its doctest blocks fenced and its Sphinx roles as code spans.

    >>> print(markdown_docstring("See :func:`~a.b.solve`.\\n\\n>>> x[0][1]\\n2\\n\\nEnd."))
    See `solve`.
    <BLANKLINE>
    ```python
    >>> x[0][1]
    2
    ```
    <BLANKLINE>
    End.
    """
    lines, out, fence, i = text.split("\n"), [], None, 0
    while i < len(lines):
        line = lines[i]
        stripped = line.lstrip()
        if stripped.startswith("```"):
            fence = None if fence else stripped[:3]
            out.append(line)
        elif fence is None and stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            block = []
            while i < len(lines) and lines[i].strip():
                block.append(lines[i])
                i += 1
            out += [f"{indent}```python", *block, f"{indent}```"]
            continue
        else:
            out.append(line if fence else _ROLE.sub(_role, line))
        i += 1
    return "\n".join(out)


class MarkdownDocstrings(griffe.Extension):
    """Rewrites every docstring with :func:`markdown_docstring` as it is loaded."""

    def on_object(self, *, obj: griffe.Object, loader: griffe.GriffeLoader, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)
