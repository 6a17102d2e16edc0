"""Every relative link in the repository's Markdown pages reaches a file of
the repository, and every #anchor a heading of the page it names (GitHub's
heading ids: lower case, punctuation dropped, spaces to hyphens, -1, -2 ...
for repeats). Read from the tracked .md files; external links are not
followed.
"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

pytestmark = pytest.mark.python_only

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def pages() -> List[Path]:
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "*.md"],
                            capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    return [ROOT / name for name in listed.stdout.split("\0") if name]


def prose_lines(text: str) -> List[str]:
    """The page's lines outside fenced code blocks, inline code removed."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", "", line))
    return lines


def heading_ids(text: str) -> Set[str]:
    ids: Set[str] = set()
    seen: Dict[str, int] = {}
    fenced = False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not match:
            continue
        slug = re.sub(r"[^\w\- ]", "", match.group(1).replace("`", "").lower())
        slug = slug.replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        ids.add(slug if count == 0 else f"{slug}-{count}")
    return ids


def broken_links(page: Path) -> List[Tuple[str, str]]:
    """(link, what is wrong) for each relative link of the page that misses."""
    wrong = []
    for line in prose_lines(page.read_text(encoding="utf-8")):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):   # http:, mailto:, ...
                continue
            name, _, anchor = target.partition("#")
            path = (page.parent / name).resolve() if name else page
            if ROOT not in path.parents and path != ROOT:
                wrong.append((target, "outside the repository"))
            elif not path.exists():
                wrong.append((target, "no such file"))
            elif anchor and path.suffix == ".md" and \
                    anchor not in heading_ids(path.read_text(encoding="utf-8")):
                wrong.append((target, f"no heading #{anchor} in {path.relative_to(ROOT)}"))
    return wrong


def test_every_relative_link_and_anchor_resolves():
    found = {str(page.relative_to(ROOT)): broken_links(page) for page in pages()}
    assert {page: links for page, links in found.items() if links} == {}


def test_the_check_sees_a_missing_file_and_a_missing_anchor(tmp_path, monkeypatch):
    monkeypatch.setitem(globals(), "ROOT", tmp_path)
    (tmp_path / "other.md").write_text("# Other page\n\n## Its `--section`\n")
    page = tmp_path / "page.md"
    page.write_text("[ok](other.md#its---section) [a](missing.md) [b](other.md#nothing)\n"
                    "[c](#here) `[d](not-a-link.md)` [e](https://example.com/x)\n\n"
                    "## Here\n\n```\n[f](in-a-fence.md)\n```\n")
    assert broken_links(page) == [("missing.md", "no such file"),
                                  ("other.md#nothing", "no heading #nothing in other.md")]
