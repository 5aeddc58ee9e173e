"""Validate an RO-Crate with roc-validator at the Provenance Run Crate profile, offline, for the tests.

The validator resolves the crate's JSON-LD context (https://w3id.org/ro/crate/1.1/context) over HTTP, through its
requests_cache cache; neither this machine nor CI reaches the web. So the context is provided the way the validator
itself would have stored it: a response for exactly that URL is saved into a cache of the test's own, made from
tests/data/ro-crate-1.1-context.jsonld, and the validator runs with --offline on that cache. That file is the RO-Crate
1.1 context as ro-crate-py 0.9 to 0.14 ship it (rocrate/data/ro-crate.jsonld; 0.15 and later ship 1.3's); its @id
and sha256 are checked before use. A check that needed any other remote resource would be skipped by the validator
as an offline cache miss: `validate` fails on that too, so no check the profile requires goes unrun.

The validator runs in the validators' python where $REPRO_VALIDATORS_PYTHON names one (tests/tool_python.py):
there this file is the script, `python crate_check.py CRATE CACHE_DIR SEVERITY`, printing `summarise`'s JSON.
So it imports only the standard library at its top.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
from pathlib import Path

CONTEXT_URL = "https://w3id.org/ro/crate/1.1/context"
CONTEXT_FILE = Path(__file__).with_name("data") / "ro-crate-1.1-context.jsonld"
CONTEXT_SHA256 = "bb5dd0a79ebd5a3b074e2faf96f437503234f8a4b8e84c7149de91eae0d2222a"
PROFILE = "provenance-run-crate-0.5"


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
            raw = urllib3.HTTPResponse(
                body=io.BytesIO(body),
                headers={"Content-Type": "application/ld+json"},
                status=200,
                preload_content=False,
                request_url=request.url,
            )
            return self.build_response(request, raw)

    session = requests_cache.CachedSession(str(cache), backend="sqlite", expire_after=-1)
    session.mount(CONTEXT_URL, Served())
    try:
        assert session.get(CONTEXT_URL).json()["@id"] == CONTEXT_URL
    finally:
        session.close()
    return cache


def summarise(crate: str, cache_dir: str, severity: str = "REQUIRED") -> dict:
    """The validator's findings on the crate at the profile (attached: the files are checked too): every issue,
    every check it skipped, every URL its offline cache lacked; whether it passed and how many checks ran."""
    from rocrate_validator import services
    from rocrate_validator.models import ValidationSettings

    cache = seed_cache(Path(cache_dir) / "http_cache")
    settings = ValidationSettings(
        rocrate_uri=str(crate),
        profile_identifier=PROFILE,
        offline=True,
        cache_path=cache,
        requirement_severity=severity,
    )
    result = services.validate(settings)
    problems = [f"{i.check.identifier}: {i.message}" for i in result.get_issues()]
    problems += [f"skipped {d.to_dict()}" for d in result.skipped_check_details]
    problems += [f"not in the cache: {url}" for url in sorted(result.context._offline_cache_misses_warned)]
    return {"problems": problems, "passed": result.passed(), "executed": len(result.executed_checks)}


def validate(crate: Path, cache_dir: Path, severity: str = "REQUIRED") -> list[str]:
    """Every issue the validator finds in the crate at the profile, and every check it skipped; [] when it
    conforms. Run where tests/tool_python.py says (skipped where no python has the validator)."""
    from tool_python import summary

    found = summary(sys.modules[__name__], [str(crate), str(cache_dir), severity], ("rocrate_validator",))
    if not found["problems"]:
        assert found["passed"] and found["executed"] > 50, "the validator ran no checks"
    return found["problems"]


if __name__ == "__main__":
    with contextlib.redirect_stdout(sys.stderr):  # stdout holds the summary alone
        found = summarise(*sys.argv[1:])
    print(json.dumps(found, default=str))
