"""Load and crash test of a real ``dmlsched serve`` process (used by tests and ``make bench``).

``python -m dmlsched.service.loadtest --clients 16 --jobs 2000 --kill`` starts
a service (manual clock, SQLite in a temp folder, or ``--postgres``: a
throwaway PostgreSQL) on a free loopback port; 16 client threads, each its
own user identity, submit 2,000 jobs over HTTP, each with its own
Idempotency-Key, while a ticker advances the clock; with ``--kill`` the
service is SIGKILLed when half the jobs are acknowledged and started again on
the same log.  A request that got no answer, a 503 (not kept) or a 429 is
retried with the same key, and its latency runs from the first attempt, so
the outage and the retries are in the percentiles.  Then every acknowledged
job must be in ``GET /v1/jobs`` with the id it was acknowledged with, and no
key twice.  Prints one JSON object: latency percentiles of acknowledged
submissions, retries, errors, restart time.

``--readers 4 --paired 4``: the submit latency without and with 4 concurrent
readers (``GET /v1/jobs`` in a loop, each its own identity), in 4 pairs of
phases on one service, alternating which phase comes first; the p50 of each
phase, their medians and the ratio of medians.

Traffic goes to 127.0.0.1 only; every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np

__all__ = [
    "LoadResult",
    "ServiceProcess",
    "check_jobs",
    "free_port",
    "list_all_jobs",
    "load_identities",
    "run_load",
    "wait_healthy",
    "write_secret",
]

JOB = {
    "epochs": 2,
    "samples": 2000,
    "batch": 4,
    "grad_mb": 10.0,
    "tau": 4e-4,
    "gamma": 2.0,
    "worker_demand": [1, 2, 4, 5],
    "ps_demand": [0, 1, 2, 2],
    "b_ext": 1.0,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, timeout: float = 60.0, proc: subprocess.Popen | None = None) -> float:
    """Seconds until ``GET /healthz`` answers 200 (raises on timeout or a dead process)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if proc is not None and proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"service exited with {proc.returncode}: {err.strip()[-500:]}")
        try:
            if httpx.get(url + "/healthz", timeout=2.0).status_code == 200:
                return time.monotonic() - t0
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise TimeoutError(f"{url} not healthy after {timeout} s")


def write_secret(path: Path, text: str) -> Path:
    """A file only its owner can read (a token file, an auth file), written whole."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


class ServiceProcess:
    """A ``dmlsched serve`` subprocess on a free loopback port; killed on exit.

    ``token`` is an admin's (``svc.headers()``); ``identities`` more lines
    ``(token, name, role[, machine])`` of the auth file.  Neither:
    ``--insecure-local``.
    """

    def __init__(
        self,
        args: list[str],
        workdir: Path,
        token: str | None = None,
        identities: tuple[tuple[str, ...], ...] = (),
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.workdir = workdir
        self.token = token
        lines = ([(token, "admin", "admin")] if token else []) + list(identities)
        if lines:
            auth = write_secret(workdir / "auth.csv", "".join(",".join(x) + "\n" for x in lines))
            extra = ["--token-auth-file", str(auth)]
        else:
            extra = ["--insecure-local"]
        self.cmd = [
            sys.executable,
            "-m",
            "dmlsched",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *extra,
            *args,
        ]
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> float:
        self.proc = subprocess.Popen(
            self.cmd,
            cwd=self.workdir,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group: killed as one
        )
        return wait_healthy(self.url, timeout, self.proc)

    def kill(self) -> None:
        """SIGKILL, no chance to flush anything."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self, timeout: float = 15.0) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        if self.proc is not None and self.proc.stderr:
            self.proc.stderr.close()

    def headers(self, token: str | None = None) -> dict[str, str]:
        """The admin's Authorization header, or ``token``'s."""
        token = token or self.token
        return {"Authorization": f"Bearer {token}"} if token else {}

    def __enter__(self) -> ServiceProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class LoadResult:
    acked: dict[str, int] = field(default_factory=dict)  # key -> job id
    # seconds from a job's first attempt to its acknowledgement: outages and retries count
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # 4xx/5xx answers (never expected)
    retries: int = 0  # attempts sent again: no answer (service down), 503 or 429
    unavailable: int = 0  # of which answered 503 (a commit failed: not kept, retry)
    limited: int = 0  # of which answered 429 (rate limit)
    seconds: float = 0.0

    def summary(self) -> dict[str, Any]:
        lat = np.asarray(self.latencies) * 1000.0
        return {
            "acknowledged": len(self.acked),
            "errors": len(self.errors),
            "first_errors": self.errors[:3],
            "retries": self.retries,
            "answered_503": self.unavailable,
            "answered_429": self.limited,
            "seconds": round(self.seconds, 3),
            "submits_per_s": round(len(self.acked) / self.seconds, 1) if self.seconds else 0.0,
            "p50_ms": round(float(np.percentile(lat, 50)), 2) if lat.size else None,
            "p99_ms": round(float(np.percentile(lat, 99)), 2) if lat.size else None,
            "max_ms": round(float(lat.max()), 2) if lat.size else None,
        }


def load_identities(clients: int) -> tuple[tuple[str, ...], ...]:
    """One user identity per client (``token, name, user``): rate limits are per identity."""
    return tuple((f"load-user-{c}-token", f"load-user-{c}", "user") for c in range(clients))


def _retry_after(r: httpx.Response) -> float:
    try:
        return min(2.0, max(0.01, float(r.headers.get("retry-after", "0.05"))))
    except ValueError:
        return 0.05


def run_load(
    svc: ServiceProcess,
    clients: int = 16,
    jobs: int = 2000,
    *,
    on_acked: Callable[[int], None] | None = None,
    tick_every: float | None = 0.2,
    deadline: float = 600.0,
    tokens: list[str] | None = None,
    prefix: str = "load",
) -> LoadResult:
    """``clients`` threads submit ``jobs`` jobs in total; ``on_acked(n)`` after each ack.

    Client c submits with ``tokens[c % len(tokens)]`` (default: the admin's)."""
    res = LoadResult()
    lock = threading.Lock()
    stop = threading.Event()
    t_end = time.monotonic() + deadline
    per = [range(c, jobs, clients) for c in range(clients)]

    def client(c: int) -> None:
        token = tokens[c % len(tokens)] if tokens else None
        with httpx.Client(base_url=svc.url, headers=svc.headers(token), timeout=10.0) as http:
            for i in per[c]:
                key = f"{prefix}-{c}-{i}"
                t0 = time.perf_counter()  # the first attempt: retries are part of latency
                while time.monotonic() < t_end:
                    try:
                        r = http.post(
                            "/v1/jobs",
                            json={**JOB, "name": key},
                            headers={"Idempotency-Key": key},
                        )
                    except httpx.TransportError:
                        with lock:
                            res.retries += 1
                        time.sleep(0.05)
                        continue
                    if r.status_code in (429, 503):  # not kept / slow down: same key again
                        with lock:
                            res.retries += 1
                            res.unavailable += r.status_code == 503
                            res.limited += r.status_code == 429
                        time.sleep(_retry_after(r))
                        continue
                    dt = time.perf_counter() - t0
                    with lock:
                        if r.status_code in (200, 201):
                            res.acked[key] = int(r.json()["id"])
                            res.latencies.append(dt)
                            n = len(res.acked)
                        else:
                            res.errors.append(f"{r.status_code} {r.text[:200]}")
                            n = -1
                    if n > 0 and on_acked is not None:
                        on_acked(n)
                    break

    def ticker() -> None:
        assert tick_every is not None
        with httpx.Client(base_url=svc.url, headers=svc.headers(), timeout=30.0) as http:
            while not stop.wait(tick_every):
                # the service may be down for a moment; the next tick will do
                with contextlib.suppress(httpx.TransportError):
                    http.post("/v1/tick")

    t0 = time.monotonic()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    tick_thread = threading.Thread(target=ticker) if tick_every else None
    if tick_thread:
        tick_thread.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    if tick_thread:
        tick_thread.join()
    res.seconds = time.monotonic() - t0
    return res


@dataclass
class Readers:
    """``n`` clients, each its own identity, reading ``GET /v1/jobs`` in a loop (as a
    dashboard or a script polling the service would), honouring 429's Retry-After."""

    svc: ServiceProcess
    tokens: list[str]
    requests: int = 0
    limited: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def __enter__(self) -> Readers:
        self._stop.clear()
        self._threads = [threading.Thread(target=self._read, args=(t,)) for t in self.tokens]
        for t in self._threads:
            t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for t in self._threads:
            t.join()

    def _read(self, token: str) -> None:
        with httpx.Client(base_url=self.svc.url, headers=self.svc.headers(token), timeout=30) as h:
            while not self._stop.is_set():
                try:
                    r = h.get("/v1/jobs")
                except httpx.TransportError:
                    self._stop.wait(0.05)
                    continue
                self.requests += 1
                if r.status_code == 429:
                    self.limited += 1
                    self._stop.wait(_retry_after(r))


def reader_identities(n: int) -> tuple[tuple[str, ...], ...]:
    return tuple((f"load-reader-{r}-token", f"load-reader-{r}", "user") for r in range(n))


def run_paired(
    svc: ServiceProcess, clients: int, jobs: int, readers: int, rounds: int, tokens: list[str]
) -> dict[str, Any]:
    """Submit latency with and without ``readers`` concurrent readers, in ``rounds`` pairs
    of phases (``jobs`` submissions each) on one service, alternating which comes first
    (the machine's load drifts): per-phase p50s, their medians and the ratio of medians."""
    reading = Readers(svc, [r[0] for r in reader_identities(readers)])
    p50: dict[bool, list[float]] = {False: [], True: []}
    acked = LoadResult()
    for r in range(rounds):
        for on in (False, True) if r % 2 == 0 else (True, False):
            tag = f"r{r}-{'read' if on else 'quiet'}"
            with reading if on else contextlib.nullcontext():
                res = run_load(svc, clients, jobs, tokens=tokens, prefix=tag)
            p50[on].append(float(np.percentile(np.asarray(res.latencies) * 1000, 50)))
            acked.acked.update(res.acked)
            acked.errors += res.errors
    quiet, read = float(np.median(p50[False])), float(np.median(p50[True]))
    return {
        "readers": readers,
        "rounds": rounds,
        "p50_ms_without_readers": [round(x, 2) for x in p50[False]],
        "p50_ms_with_readers": [round(x, 2) for x in p50[True]],
        "p50_ratio_of_medians": round(read / quiet, 3),
        "target_ratio_le_2_held": read / quiet <= 2.0,
        "p50_ratio_per_round": [
            round(b / a, 3) for a, b in zip(p50[False], p50[True], strict=True)
        ],
        "reader_requests": reading.requests,
        "reader_429s": reading.limited,
        "errors": len(acked.errors),
        **{k: v for k, v in check_jobs(svc, acked).items() if k != "jobs_listed"},
    }


def list_all_jobs(svc: ServiceProcess, token: str | None = None) -> list[dict[str, Any]]:
    """Every job ``token`` (default: the admin) may see, page by page."""
    out: list[dict[str, Any]] = []
    with httpx.Client(base_url=svc.url, headers=svc.headers(token), timeout=60.0) as http:
        while True:
            r = http.get(
                "/v1/jobs", params={"since_id": out[-1]["id"] if out else -1, "limit": 1000}
            )
            r.raise_for_status()
            page = r.json()
            if not page:
                return out
            out += page


def check_jobs(svc: ServiceProcess, res: LoadResult) -> dict[str, Any]:
    """Every acknowledged key present once with its acknowledged id; no key twice."""
    listed = list_all_jobs(svc)
    by_key: dict[str, list[int]] = {}
    for j in listed:
        by_key.setdefault(j["key"], []).append(j["id"])
    missing = [k for k in res.acked if k not in by_key]
    twice = [k for k, ids in by_key.items() if len(ids) > 1]
    wrong = [k for k, i in res.acked.items() if k in by_key and by_key[k] != [i]]
    return {
        "jobs_listed": len(listed),
        "missing": len(missing),
        "duplicated": len(twice),
        "wrong_id": len(wrong),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--jobs", type=int, default=2000)
    ap.add_argument("--scheduler", default="fifo")
    ap.add_argument("--kill", action="store_true", help="SIGKILL + restart at half the jobs")
    ap.add_argument("--db", default=None, help="SQLite path or postgresql:// URL")
    ap.add_argument(
        "--postgres", action="store_true", help="on a throwaway PostgreSQL (needs root)"
    )
    ap.add_argument("--readers", type=int, default=0, help="concurrent readers (with --paired)")
    ap.add_argument("--paired", type=int, default=0, help="rounds of without/with readers")
    a = ap.parse_args(argv)
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="dmlsched-load-")))
        if a.postgres:
            from dmlsched.service.pgserver import ThrowawayPostgres, why_not

            if why_not() is not None:
                print(json.dumps({"skipped": f"--postgres {why_not()}"}))
                return 0
            db = stack.enter_context(ThrowawayPostgres(port=5434)).url
        else:
            db = a.db or str(work / "load.db")
        users = load_identities(a.clients)
        svc = ServiceProcess(
            ["--scheduler", a.scheduler, "--db", db, "--manual-clock"],
            work,
            token="load-token",
            identities=users + reader_identities(a.readers),
        )
        out: dict[str, Any] = {
            "clients": a.clients,
            "jobs": a.jobs,
            "scheduler": a.scheduler,
            "db": "postgresql" if "://" in db else "sqlite",
        }
        svc.start()
        stack.callback(svc.stop)
        for i in range(3):
            httpx.post(
                svc.url + "/v1/machines",
                json={"name": f"m{i}", "capacity": [4, 16, 64, 100]},
                headers=svc.headers(),
            ).raise_for_status()
        tokens = [u[0] for u in users]
        if a.paired:
            out.update(run_paired(svc, a.clients, a.jobs, a.readers, a.paired, tokens))
            print(json.dumps(out, sort_keys=True))
            bad = out["errors"] or out["missing"] or out["duplicated"] or out["wrong_id"]
            return 1 if bad else 0
        killed = threading.Event()

        def on_acked(n: int) -> None:
            if a.kill and n >= a.jobs // 2 and not killed.is_set():
                killed.set()
                svc.kill()
                out["acked_at_kill"] = n
                out["restart_s"] = round(svc.start(), 3)

        res = run_load(svc, a.clients, a.jobs, on_acked=on_acked if a.kill else None, tokens=tokens)
        out.update(res.summary())
        out.update(check_jobs(svc, res))
    print(json.dumps(out, sort_keys=True))
    bad = out["errors"] or out["missing"] or out["duplicated"] or out["wrong_id"]
    return 1 if bad or out["acknowledged"] != a.jobs else 0


if __name__ == "__main__":
    sys.exit(main())
