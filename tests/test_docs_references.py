"""The docs point at things that exist: every link between the README and docs/ names a file there and, after
'#', one of its headings (as GitHub makes anchors of them); every "the README's X section" names a heading of
the README. docs/results-data.md cited "the README's Reproducibility section", which the README does not have."""

import re

from checkout import REPO_ROOT

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
SECTION = re.compile(r"README's\s+([\w-]+)\s+section", re.I)


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped but hyphens, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def headings(page) -> list[str]:
    return re.findall(r"^#+ (.*)$", page.read_text(), re.M)


def test_github_anchors_of_headings():
    assert [anchor(h) for h in ("3. Datasets", "What you get", "Price, then run", "`repro export`")] == [
        "3-datasets",
        "what-you-get",
        "price-then-run",
        "repro-export",
    ]


def test_every_link_between_the_pages_names_a_file_and_a_heading_that_exist():
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path, _, fragment = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif fragment and linked.suffix == ".md" and fragment not in map(anchor, headings(linked)):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken


def test_every_section_of_the_readme_the_pages_cite_exists():
    titles = [h.lower() for h in headings(REPO_ROOT / "README.md")]
    cited = [(page.name, name) for page in PAGES for name in SECTION.findall(page.read_text())]
    assert not [(page, name) for page, name in cited if not any(name.lower() in t for t in titles)], cited
