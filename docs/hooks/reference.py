"""MkDocs hook: the generated pages, and the few links that leave the documentation folder.

- ``on_files`` adds the pages of ``docs/gen_reference.py`` (the command line, the
  configuration and the API reference), made from the code at every build, and the
  repository's ``CHANGELOG.md`` as ``changelog.md``;
- ``on_page_markdown`` rewrites the links of :data:`OUTSIDE` (files of the repository that
  are not part of the site) to the page of the site that says the same; any other link out
  of the documentation folder stays as it is, and the strict build fails on it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.structure.files import File

DOCS = Path(__file__).resolve().parents[1]
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS))

import gen_reference  # noqa: E402

#: Links to repository files outside docs/ -> the site's page on the same subject.
OUTSIDE = {"../README.md": "getting-started.md"}


def on_files(files, config):
    for path, text in gen_reference.pages().items():
        files.append(File.generated(config, path, content=text))
    files.append(
        File.generated(config, "changelog.md", content=(ROOT / "CHANGELOG.md").read_text())
    )
    return files


def on_page_markdown(markdown, page, config, files):
    for link, target in OUTSIDE.items():
        markdown = markdown.replace(f"]({link})", f"]({target})")
    return markdown
