"""The checkout the suite tests: its root, for the files that are not package data (docs, the Dockerfile, CI's
scripts), and the package data it reads by path (the manifests, the paper's tables)."""

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFESTS = REPO_ROOT / "repro" / "manifests"
PAPER_TABLES = REPO_ROOT / "repro" / "paper_tables"
