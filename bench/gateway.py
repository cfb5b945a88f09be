"""Benchmark of session.prepare and tasks.get over HTTP, against a baseline of the same run.

Usage: python bench/gateway.py [--clients 16] [--seconds 10] [--workers 4]
                               [--database-url postgresql://postgres@127.0.0.1:5432/xworkmate_bench]

Starts the service as in production (migrate, then gunicorn with --workers,
PostgreSQL) in a temporary data home with its own workspace, seeds 200 app
threads (each prepared, with one file written by "the agent" and half of them
ended by agent_end), then drives each call with concurrent clients (separate
processes, one connection per request, as gunicorn's sync workers close them)
for --seconds and prints requests/s and p50/p99 latency per call next to the
baseline: `GET /api/ping`, an authenticated endpoint with a constant body.

The database named in --database-url is dropped and created afresh.
Targets: tasks.get without artifacts at >= 55% of the baseline's requests/s,
session.prepare at >= 35%.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench._common import (  # noqa: E402 (needs ROOT on the path)
    api_key,
    gunicorn,
    request,
    run_phase,
    service_home,
)

THREADS = 200


def _operation(name: str, client: int, i: int) -> tuple[str, str, object | None]:
    thread = (client * 7919 + i) % THREADS
    if name == "baseline GET /api/ping":
        return "GET", "/api/ping", None
    if name == "session.prepare":
        # A re-prepare of a mapped thread with a new run: the mapping update,
        # a new running run, the scope directory.
        return (
            "POST",
            "/gateway/xworkmate.session.prepare",
            {
                "schemaVersion": 1,
                "appThreadKey": f"thread-{thread}",
                "openclawSessionKey": f"agent:main:thread-{thread}",
                "runId": f"bench-{client}-{i}",
            },
        )
    params: dict[str, object] = {"appThreadKey": f"thread-{thread}", "runId": "run-1"}
    if name == "tasks.get (no artifacts)":
        params["includeArtifacts"] = False
    return "POST", "/gateway/xworkmate.tasks.get", params


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument(
        "--database-url", default="postgresql://postgres@127.0.0.1:5432/xworkmate_bench"
    )
    args = parser.parse_args()

    env = service_home(args.database_url, "xworkmate-bench-")
    token = api_key(env, "gateway:write")
    with gunicorn(env, token, args.workers) as port:
        for thread in range(THREADS):
            key = f"agent:main:thread-{thread}"
            status, body = request(
                port,
                token,
                "POST",
                "/gateway/xworkmate.session.prepare",
                {"appThreadKey": f"thread-{thread}", "openclawSessionKey": key, "runId": "run-1"},
            )
            assert status == 200, body
            directory = Path(json.loads(body)["payload"]["artifactDirectory"])
            (directory / "report.md").write_text(f"# report {thread}\n", encoding="utf-8")
            if thread % 2:
                request(
                    port,
                    token,
                    "POST",
                    "/api/gateway/hooks/agent_end",
                    {
                        "event": {
                            "runId": "run-1",
                            "success": True,
                            "messages": [{"role": "assistant", "content": "done"}],
                        },
                        "ctx": {"sessionKey": key},
                    },
                )

        phases = [
            "baseline GET /api/ping",
            "tasks.get (no artifacts)",
            "tasks.get (with artifacts)",
            "session.prepare",
        ]
        rows = []
        with ProcessPoolExecutor(max_workers=args.clients) as pool:
            phase = partial(
                run_phase, pool, _operation, port=port, token=token, clients=args.clients
            )
            phase(name=phases[0], seconds=1.0)  # warm-up
            for name in phases:
                rows.append((name, phase(name=name, seconds=args.seconds)))

    base = rows[0][1]["rps"]
    print(
        f"gunicorn --workers {args.workers}, PostgreSQL, {args.clients} concurrent clients, "
        f"{args.seconds:g} s per call, {os.cpu_count()} CPUs"
    )
    print(
        f"{'call':<28} {'req/s':>9} {'p50 ms':>8} {'p99 ms':>8} {'vs baseline':>12} {'errors':>7}"
    )
    for name, row in rows:
        print(
            f"{name:<28} {row['rps']:>9.0f} {row['p50']:>8.1f} {row['p99']:>8.1f} "
            f"{row['rps'] / base:>11.0%} {row['errors']:>7.0f}"
        )
    by_name = dict(rows)
    for name, target in (("tasks.get (no artifacts)", 0.55), ("session.prepare", 0.35)):
        ratio = by_name[name]["rps"] / base
        verdict = "met" if ratio >= target else "NOT met"
        print(f"target: {name} >= {target:.0%} of baseline: {verdict} ({ratio:.0%})")
    return 0 if all(row["errors"] == 0 for _, row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
