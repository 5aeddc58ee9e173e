"""Tests' small manifests written inline, each with its own profiles: a document's `profiles` table is
read as a profiles file (repro.spec.profiles.parse_profiles) and attached, as the loader attaches the shipped
ones to a manifest file."""

from __future__ import annotations

from typing import Any

from repro.plan.manifest import Manifest, parse_manifest, with_profiles
from repro.spec.profiles import parse_profiles


def inline_manifest(doc: dict[str, Any], file: str = "t.toml") -> Manifest:
    doc = dict(doc)
    profiles = parse_profiles({"profiles": doc.pop("profiles")}, file)
    if "seeds" not in doc and "full" in profiles:
        doc["seeds"] = profiles["full"].seeds or 1
    return with_profiles(parse_manifest(doc, file), profiles)
