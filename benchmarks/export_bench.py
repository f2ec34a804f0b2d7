"""Export benchmark: 100,000 candidate rows as streamed CSV and as OData pages.

    python benchmarks/export_bench.py [--rows 100000] [--page-size 2000]
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/kernelhub_bench \
        python benchmarks/export_bench.py

Builds a throw-away database (SQLite under a temp dir, or the PostgreSQL database named by
DATABASE_URL, created if missing and emptied first), fills one team with ROWS candidates,
then requests through the real URL stack with a read-only API key:

* `GET /api/v1/exports/candidates.csv` (streamed; the body is consumed chunk by chunk),
* `GET /odata/candidates`, following `@odata.nextLink` to the end (keyset paging),
* the same with `$orderby=reward desc` (offset paging).

Each is run twice: once for wall time, once under tracemalloc for the peak of Python
allocations within a request, the worst request (the database driver's C buffers are not
counted; the process's max RSS is printed too).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def setup_django(database_url: str | None) -> None:
    os.environ.setdefault("KERNELHUB_DATA_DIR", tempfile.mkdtemp(prefix="kernelhub-bench-"))
    os.environ["DJANGO_SETTINGS_MODULE"] = "kernelhub.settings"
    os.environ["DEBUG"] = "0"
    os.environ.setdefault("SECRET_KEY", "benchmark-only")
    os.environ.setdefault("SECURE_SSL_REDIRECT", "0")
    if database_url:
        import dj_database_url
        import psycopg

        params = dj_database_url.parse(database_url)
        with psycopg.connect(host=params["HOST"], port=params["PORT"] or 5432,
                             user=params["USER"], dbname="postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{params["NAME"]}"')
            conn.execute(f'CREATE DATABASE "{params["NAME"]}"')
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def populate(rows: int):
    from django.utils import timezone

    from kernelhub.optimization.models import Candidate, Problem, SearchSession
    from kernelhub.optimization.services import hardware_targets_sync
    from kernelhub.teams.services import api_key_create, team_create

    team = team_create(name="bench")
    other = team_create(name="other")  # rows that must not appear
    hardware = {h.name: h for h in hardware_targets_sync()}
    problem = Problem.objects.create(name="softmax", family="reduction", source="#",
                                     source_sha256="0" * 64)
    sessions = [SearchSession.objects.create(team=t, problem=problem, hardware=hardware["h200"])
                for t in (team, other)]
    now = timezone.now()
    statuses = ("correct", "incorrect", "compile_error", "rejected_lazy", "correct")
    batch = []
    for i in range(rows + 1000):
        session = sessions[0] if i < rows else sessions[1]
        batch.append(Candidate(
            session=session, node_id=str(i), depth=1 + i % 8, status=statuses[i % 5],
            reward=(i % 97) / 20, speedup_vs_eager=0.5 + (i % 53) / 10,
            speedup_vs_compile=0.4 + (i % 31) / 10, coverage=(i % 100) / 100,
            timing={"candidate": {"median_ms": 0.05 + i % 11 / 100, "iqr_ms": 0.001,
                                  "samples": 200, "method": "cuda_events+l2_flush"},
                    "eager": {"median_ms": 0.15, "iqr_ms": 0.002, "samples": 200,
                              "method": "cuda_events+l2_flush"}},
            diagnostics={"bottleneck": {"class": "memory-bound", "reason": "82% of peak"}},
            origin={"synthesizer": "offline", "transformation": f"t{i % 12}"},
            integrity_flags=[] if i % 10 else [{"check": "x", "evidence": "y",
                                                "severity": "warning"}],
            evaluated_at=now,
        ))
        if len(batch) == 5000:
            Candidate.objects.bulk_create(batch)
            batch.clear()
    Candidate.objects.bulk_create(batch)
    return api_key_create(team=team, name="bench", scope="read").raw_key


class PeakPerRequest:
    """Peak of Python allocations within one request, the worst over all requests.

    Garbage from earlier requests is collected first, so the figure is what one request
    needs (what a server process must hold), not what a client loop piles up."""

    def __init__(self, enabled: bool):
        self.enabled, self.worst = enabled, 0

    def __enter__(self):
        if self.enabled:
            gc.collect()
            tracemalloc.reset_peak()
            self.base = tracemalloc.get_traced_memory()[0]
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self.worst = max(self.worst, tracemalloc.get_traced_memory()[1] - self.base)


def csv_export(client, probe: PeakPerRequest) -> dict:
    with probe:
        response = client.get("/api/v1/exports/candidates.csv")
        assert response.status_code == 200, response.status_code
        size = sum(len(chunk) for chunk in response.streaming_content)
    return {"requests": 1, "bytes": size}


def odata_pages(client, probe: PeakPerRequest, query: str = "") -> dict:
    url, pages, rows, size = "/odata/candidates" + query, 0, 0, 0
    while url:
        with probe:
            response = client.get(url)
            assert response.status_code == 200, response.content[:300]
            body = json.loads(response.content)
        size += len(response.content)
        rows += len(body["value"])
        pages += 1
        link = body.get("@odata.nextLink")
        url = (urlsplit(link).path + "?" + urlsplit(link).query) if link else None
        del body, response
    return {"requests": pages, "rows": rows, "bytes": size}


def measure(name: str, fn, *args) -> dict:
    gc.collect()
    started = time.perf_counter()
    result = fn(args[0], PeakPerRequest(False), *args[1:])
    elapsed = time.perf_counter() - started
    tracemalloc.start()
    probe = PeakPerRequest(True)
    fn(args[0], probe, *args[1:])
    tracemalloc.stop()
    result.update(name=name, seconds=round(elapsed, 2),
                  peak_python_mib=round(probe.worst / 2**20, 1))
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--page-size", type=int, default=2000)
    args = parser.parse_args(argv)
    database_url = os.environ.get("DATABASE_URL")
    setup_django(database_url)
    from django.conf import settings
    from django.db import connection
    from django.test import Client

    settings.KERNELHUB_API_THROTTLE_RATES = {"api": None, "exports": None}
    settings.KERNELHUB_ODATA_PAGE_SIZE = args.page_size
    settings.ALLOWED_HOSTS = ["testserver"]
    started = time.perf_counter()
    key = populate(args.rows)
    print(f"database: {connection.vendor}; populated {args.rows:,} candidate rows (+1,000 of "
          f"another team) in {time.perf_counter() - started:.1f} s")
    client = Client(HTTP_AUTHORIZATION=f"Api-Key {key}")
    assert client.get("/odata/candidates?$top=1").status_code == 200  # warm-up (imports)
    results = [
        measure("CSV export (streamed)", csv_export, client),
        measure(f"OData pages, keyset (page {args.page_size})", odata_pages, client),
        measure(f"OData pages, $orderby=reward desc (offset, page {args.page_size})",
                odata_pages, client, "?$orderby=reward%20desc"),
    ]
    for r in results:
        assert r.get("rows", args.rows) == args.rows, r
        rate = args.rows / r["seconds"]
        print(f"{r['name']}: {r['seconds']:.2f} s ({rate:,.0f} rows/s), {r['requests']} "
              f"request(s), {r['bytes'] / 2**20:.1f} MiB, peak Python memory "
              f"{r['peak_python_mib']} MiB per request")
    print(f"process max RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
