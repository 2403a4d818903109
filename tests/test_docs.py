"""The README and docs/ hold together: every link resolves (file and heading), every page is
reachable from the README, and every repository path they name in backticks exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from repo_paths import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE_PATH = re.compile(
    r"`((?:exporter|reclaimer|webconfig|gpu_contract|deploy|rules|grafana|tests|"
    r"scripts|bench|docs)/[\w./-]*\.(?:py|ya?ml|md|sh|json))`"
)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found, in_code = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and (m := re.match(r"^#{1,6} (.*)", line)):
            found.add(slug(m.group(1)))
    return found


def links(page: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return [t for t in LINK.findall(text) if not re.match(r"[a-z]+://|mailto:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_link_resolves_to_a_file_and_heading(page: Path) -> None:
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor} in {dest.relative_to(REPO)}")
    assert broken == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_repository_path_named_exists(page: Path) -> None:
    missing = [p for p in CODE_PATH.findall(page.read_text()) if not (REPO / p).exists()]
    assert missing == []


def test_every_doc_page_is_reachable_from_the_readme() -> None:
    seen: set[Path] = set()
    todo = [REPO / "README.md"]
    while todo:
        page = todo.pop()
        if page in seen or page.suffix != ".md" or not page.exists():
            continue
        seen.add(page)
        todo += [(page.parent / t.partition("#")[0]).resolve() for t in links(page)]
    orphans = [str(p.relative_to(REPO)) for p in PAGES if p.resolve() not in seen]
    assert orphans == []


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        ("Supported versions", "supported-versions"),
        (
            "Policy (`--policy-file`, the `gpu-sharing-config` file)",
            "policy---policy-file-the-gpu-sharing-config-file",
        ),
        ("Backtest: what each policy would have done", "backtest-what-each-policy-would-have-done"),
    ],
)
def test_slugs_follow_github(heading: str, anchor: str) -> None:
    assert slug(heading) == anchor


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_page_sends_users_to_the_ci_mirror(page: Path) -> None:
    """The traces come from `gpu-reclaimer traces fetch`; a folder beside our CI's checkout is
    nowhere a user has."""
    assert "../shared" not in page.read_text()
