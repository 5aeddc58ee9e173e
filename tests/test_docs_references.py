"""The docs point at things that exist: every link between the README and docs/ names a file there and, after
'#', one of its headings (as GitHub makes anchors of them); every "the README's X section" names a heading of
the README. docs/results-data.md cited "the README's Reproducibility section", which the README does not have.
Every path of the checkout a page names exists, every "<package>/<module>.<name>" names a definition, and every
file of docs/architecture.md's layer table sits in its package (the dotted names of modules: tests/test_layout.py)."""

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


# ------------------------------------------------------------- the code the pages name
# A path of the checkout ("repro/...", "tests/...", "tools/...", "docs/..."; one with a <placeholder> is a
# pattern), and a function or class as docs/architecture.md writes one: "<package>/<module>.<name>".
PATH = re.compile(r"(?<![\w/.-])((?:repro|tests|tools|docs|\.ci)/[\w./<>-]*)")
NAMED = re.compile(r"(?<![\w/.-])((?:repro/)?[a-z_]+(?:/[a-z_]+)+)\.([A-Za-z_]\w*)\b(?![/.]\w)")
SUFFIXES = {"py", "toml", "json", "md", "sh", "txt", "j2", "yml", "yaml", "tex", "html", "png", "cff", "csv", "log"}
PACKAGES = {p.name for p in (REPO_ROOT / "repro").iterdir() if (p / "__init__.py").is_file()}


def missing_paths(text: str) -> list[str]:
    """The paths of the checkout `text` names that do not exist (a pattern, `tests/test_<module>.py`, is none)."""
    found = (path.rstrip(".") for path in PATH.findall(text))
    return [path for path in found if "<" not in path and not (REPO_ROOT / path).exists()]


def test_a_path_that_does_not_exist_is_found():
    text = "`repro/data/options.py` and repro/data/read_options.py. `tests/test_<module>.py`, (tools/device/check.sh)"
    assert missing_paths(text) == ["repro/data/options.py"]


def test_every_path_the_pages_name_exists():
    """A file moved or renamed leaves no page pointing at its old place."""
    missing = [
        f"{page.name}:{n}: {path}"
        for page in PAGES
        for n, line in enumerate(page.read_text().splitlines(), 1)
        for path in missing_paths(line)
    ]
    assert not missing, "no such file or folder; say where it lives now:\n" + "\n".join(missing)


def named_code(text: str) -> list[str]:
    """The `repro.<package>.<module>.<name>` of every "<package>/<module>.<name>" in `text`."""
    out = []
    for path, name in NAMED.findall(text):
        parts = path.removeprefix("repro/").split("/")
        if parts[0] in PACKAGES and name not in SUFFIXES:
            out.append(".".join(["repro", *parts, name]))
    return out


def test_a_name_written_as_a_path_is_read_as_its_module_and_name():
    text = "`cli/common.begin`, plan/manifest.with_profiles, `repro/plan/manifest.py`, results/full/report.md"
    assert named_code(text) == ["repro.cli.common.begin", "repro.plan.manifest.with_profiles"]


def test_every_function_or_class_the_pages_name_by_its_module_path_exists():
    from test_layout import unresolved  # the check of the dotted names (tests/test_layout.py)

    stale = [
        f"{page.name}:{n}: {name} ({why})"
        for page in PAGES
        for n, line in enumerate(page.read_text().splitlines(), 1)
        for name in named_code(line)
        if (why := unresolved(name))
    ]
    assert not stale, "\n".join(stale)


def test_every_file_the_architecture_table_names_is_in_its_package():
    """docs/architecture.md's layer table named data/options.py, which had become data/read_options.py."""
    page = REPO_ROOT / "docs" / "architecture.md"
    rows = re.findall(r"^\| \d+ \| (.+?) \| (.+) \|$", page.read_text(), re.M)
    assert len(rows) >= 16, "the layer table of docs/architecture.md is not where this test reads it"
    missing = []
    for packages, holds in rows:
        homes = [REPO_ROOT / "repro" / p for p in re.findall(r"`(\w+)/`", packages)] or [REPO_ROOT / "repro"]
        for name in re.findall(r"`([\w/]+\.(?:py|toml|json))`", holds):
            if not any((home / name).is_file() for home in ([REPO_ROOT / "repro"] if "/" in name else homes)):
                missing.append(f"{packages}: {name}")
    assert not missing, "docs/architecture.md's layer table names files its packages do not hold: " + str(missing)


def test_the_claims_page_names_every_rule_beside_the_file_that_defines_it():
    """docs/claims.md's "Where the rules live" left out latency's four rules and extension.py's
    router_order_stable: a maintainer looking for a rule to reuse did not find them."""
    from repro.claims import RULES

    page = (REPO_ROOT / "docs" / "claims.md").read_text()
    listed = {
        path: set(re.findall(r"`(\w+)`", names))
        for path, names in re.findall(r"^\| `(repro/claims/\w+\.py)` \| (.+) \|$", page, re.M)
    }
    assert listed, "docs/claims.md has no table of `repro/claims/<file>.py` | rules rows"
    unlisted = []
    for entry in RULES:
        home = entry.target.__module__.replace(".", "/") + ".py"
        if entry.name not in listed.get(home, set()):
            unlisted.append(f"{entry.name} ({home})")
    assert not unlisted, "add these rules to docs/claims.md's table, on their file's row: " + ", ".join(unlisted)


def test_every_path_the_code_names_in_its_docstrings_and_comments_exists():
    """repro/rho/model_list.py named tests/test_rho_catalog.py, which had moved to tests/rho/test_catalog.py."""
    files = [
        *(REPO_ROOT / "repro").rglob("*.py"),
        *(REPO_ROOT / "repro").rglob("*.toml"),
        *(REPO_ROOT / "tools").rglob("*.py"),
    ]
    missing = [
        f"{path.relative_to(REPO_ROOT)}:{n}: {name}"
        for path in sorted(files)
        for n, line in enumerate(path.read_text().splitlines(), 1)
        for name in missing_paths(line)
    ]
    assert not missing, "no such file or folder; say where it lives now:\n" + "\n".join(missing)
