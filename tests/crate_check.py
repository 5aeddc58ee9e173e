"""Validate an RO-Crate with roc-validator at the Provenance Run Crate profile, offline, for the tests.

The validator resolves the crate's JSON-LD context (https://w3id.org/ro/crate/1.1/context) over HTTP, through its
requests_cache cache; neither this machine nor CI reaches the web. So the context is provided the way the validator
itself would have stored it: a response for exactly that URL is saved into a cache of the test's own, made from
tests/data/ro-crate-1.1-context.jsonld, and the validator runs with --offline on that cache. That file is the RO-Crate
1.1 context as ro-crate-py 0.9 to 0.14 ship it (rocrate/data/ro-crate.jsonld; 0.15 and later ship 1.3's); its @id
and sha256 are checked before use. A check that needed any other remote resource would be skipped by the validator
as an offline cache miss: `validate` fails on that too, so no check the profile requires goes unrun.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest

CONTEXT_URL = "https://w3id.org/ro/crate/1.1/context"
CONTEXT_FILE = Path(__file__).with_name("data") / "ro-crate-1.1-context.jsonld"
CONTEXT_SHA256 = "bb5dd0a79ebd5a3b074e2faf96f437503234f8a4b8e84c7149de91eae0d2222a"
PROFILE = "provenance-run-crate-0.5"

pytest.importorskip("rocrate_validator", reason="roc-validator is in the dev extra")


def context_document() -> bytes:
    data = CONTEXT_FILE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == CONTEXT_SHA256, f"{CONTEXT_FILE} is not the file it was"
    assert json.loads(data)["@id"] == CONTEXT_URL, f"{CONTEXT_FILE} is not the RO-Crate 1.1 context"
    return data


def seed_cache(cache: Path) -> Path:
    """A requests_cache SQLite cache holding the 1.1 context's response, as an online run would leave it."""
    import requests
    import requests_cache
    import urllib3

    body = context_document()

    class Served(requests.adapters.HTTPAdapter):
        def send(self, request, **kwargs):
            assert request.url == CONTEXT_URL, request.url
            raw = urllib3.HTTPResponse(body=io.BytesIO(body), headers={"Content-Type": "application/ld+json"},
                                       status=200, preload_content=False, request_url=request.url)
            return self.build_response(request, raw)

    session = requests_cache.CachedSession(str(cache), backend="sqlite", expire_after=-1)
    session.mount(CONTEXT_URL, Served())
    try:
        assert session.get(CONTEXT_URL).json()["@id"] == CONTEXT_URL
    finally:
        session.close()
    return cache


def validate(crate: Path, cache_dir: Path, severity: str = "REQUIRED") -> list[str]:
    """Every issue the validator finds in the crate at the profile (attached: the files are checked too), and every
    check it skipped; [] when it conforms."""
    from rocrate_validator import services
    from rocrate_validator.models import ValidationSettings

    cache = seed_cache(cache_dir / "http_cache")
    settings = ValidationSettings(rocrate_uri=str(crate), profile_identifier=PROFILE, offline=True, cache_path=cache,
                                  requirement_severity=severity)
    result = services.validate(settings)
    problems = [f"{i.check.identifier}: {i.message}" for i in result.get_issues()]
    problems += [f"skipped {d.to_dict()}" for d in result.skipped_check_details]
    problems += [f"not in the cache: {url}" for url in sorted(result.context._offline_cache_misses_warned)]
    if not problems:
        assert result.passed() and len(result.executed_checks) > 50, "the validator ran no checks"
    return problems
