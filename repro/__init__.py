"""Reproducibility artifact for arXiv 2605.15484 (sparse MoE and backbone compute leverage)."""

from pathlib import Path

__version__ = "0.1.0"

# The repository root holds manifests/ and paper_tables/ next to the package.
REPO_ROOT = Path(__file__).resolve().parents[1]
