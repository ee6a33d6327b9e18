"""MkDocs hook: the generated pages, the figures, and the links that leave docs/.

- ``on_files`` adds the pages of ``docs/gen_reference.py`` (the command line, the
  configuration and the API reference), made from the code at every build, the repository's
  ``CHANGELOG.md`` as ``changelog.md``, and the committed figures (``figures/*.png``) under
  ``figures/``, so that a page may show them;
- ``on_page_markdown`` rewrites the relative links and images that leave docs/: one to the
  repository's ``figures/`` goes to the site's copy, one of :data:`OUTSIDE` to the page of the
  site that says the same; any other stays as it is, and the strict build fails on it.
"""

from __future__ import annotations

import posixpath
import re
import sys
from pathlib import Path

from mkdocs.structure.files import File

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS))

import gen_reference  # noqa: E402

#: Repository files outside docs/ that the site has no copy of -> the site's page on the same
#: subject (paths relative to the repository root).
OUTSIDE = {"README.md": "getting-started.md"}
#: The committed figures, shown by the pages as ``figures/NAME.png`` of the site.
FIGURES = "figures"

_LINK = re.compile(r"(\]\()([^)\s#]+)(#[^)\s]*)?(\))")


def on_files(files, config):
    for path, text in gen_reference.pages().items():
        files.append(File.generated(config, path, content=text))
    files.append(
        File.generated(config, "changelog.md", content=(ROOT / "CHANGELOG.md").read_text())
    )
    for png in sorted((ROOT / FIGURES).glob("*.png")):
        files.append(File.generated(config, f"{FIGURES}/{png.name}", abs_src_path=str(png)))
    return files


def outside_target(page_uri: str, target: str) -> str | None:
    """Where the site has what the relative link ``target`` of the page ``page_uri`` (its
    path under docs/) points to outside docs/, as a link relative to the page; None for a link
    that stays inside docs/ or that the site has no copy of.

    >>> outside_target("README.md", "../README.md")
    'getting-started.md'
    >>> outside_target("reference/cli.md", "../../figures/multiskill_fig1_model.png")
    '../figures/multiskill_fig1_model.png'
    >>> outside_target("multiskill.md", "deadlines.md") is None
    True
    """
    if "://" in target or target.startswith(("/", "mailto:")):
        return None
    in_repo = posixpath.normpath(posixpath.join("docs", posixpath.dirname(page_uri), target))
    if in_repo.startswith("docs/") or in_repo.startswith("../"):
        return None
    if in_repo in OUTSIDE:
        site_path = OUTSIDE[in_repo]
    elif in_repo.startswith(f"{FIGURES}/") and in_repo.endswith(".png"):
        site_path = in_repo
    else:
        return None
    return posixpath.relpath(site_path, posixpath.dirname(page_uri) or ".")


def on_page_markdown(markdown, page, config, files):
    def rewrite(match: re.Match) -> str:
        target = outside_target(page.file.src_uri, match.group(2))
        if target is None:
            return match.group(0)
        # an anchor is kept: the strict build checks that the target page has it
        return f"{match.group(1)}{target}{match.group(3) or ''}{match.group(4)}"

    return _LINK.sub(rewrite, markdown)
