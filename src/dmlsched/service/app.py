"""The HTTP/JSON API (FastAPI; OpenAPI at ``/openapi.json``, docs at ``/docs``).

Every endpoint but ``/healthz`` and the dashboard's page needs
``Authorization: Bearer <token>`` of an identity (:mod:`dmlsched.service.auth`):
401 without a known one, 403 for what its role may not do (another user's
job, another machine, an admin's act), 429 past its rate limit.  Lists are
paged (:data:`PAGE` by default).  Bad bodies get a 4xx whose ``detail`` is
one line naming the field: 400 malformed JSON, 413 a body over
:data:`MAX_BODY` bytes, 422 a missing or out-of-domain field.

All state lives in one :class:`~dmlsched.service.core.Core` behind one lock:
every request that changes something is committed to the log before it is
answered.
"""

from __future__ import annotations

import bisect
import contextlib
import math
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from typing import Annotated, Any, TypeVar

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from pydantic import ValidationError
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dmlsched.errors import InvalidInput, InvalidReport
from dmlsched.model.cluster import RESOURCES
from dmlsched.service import whatif
from dmlsched.service.auth import LOCAL, Identity, RateLimiter, Tokens
from dmlsched.service.core import REFUSALS, Core, JobState, Machine
from dmlsched.service.schemas import JobRequest, MachineRequest, ProgressReport
from dmlsched.service.store import StoreUnavailable
from dmlsched.service.whatif import DEFAULT_HORIZON

__all__ = ["MAX_BODY", "MAX_PAGE", "PAGE", "SNAPSHOT_EVERY", "Service", "create_app"]

MAX_BODY = 64 * 1024  # bytes; a job request is well under 2 KiB
PAGE = 100  # jobs per page unless a client asks for more
SNAPSHOT_EVERY = 10_000  # records between snapshots: what a restart replays at most
MAX_PAGE = 1000
# the largest sequence number the logs store (SQLite's INTEGER, PostgreSQL's BIGINT)
MAX_SEQ = 2**63 - 1

T = TypeVar("T")


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0][:300] if text else type(e).__name__


class Service:
    """The core, its lock, the slot clock and the metrics of one running service.

    **Acknowledged means durable.**  A request is applied to the core in memory,
    its record queued, and it is answered once the record is committed
    (:meth:`call`); requests that arrive meanwhile share the commit.  If a
    commit fails, nothing queued with it was kept: the core is rebuilt from
    the log (:meth:`_rollback`) and every request whose record was not
    committed — in the failed group or queued after it — gets 503, never a
    2xx (each request carries the *generation* of the core it was applied to).
    A slot whose commit fails is rolled back the same way before anything
    acts on it.  A store that cannot be reached any more (:class:`StoreUnavailable`)
    is fatal: ``on_fatal`` stops the server, which exits non-zero.
    """

    def __init__(
        self,
        core: Core,
        *,
        tokens: Tokens | None = None,
        rate_limit: float | None = None,
        slot_seconds: float | None = None,
        on_fatal: Callable[[str], None] | None = None,
        snapshot_every: int = SNAPSHOT_EVERY,
    ) -> None:
        self.core = core
        self.snapshot_every = snapshot_every  # records between snapshots (0: none)
        self.tokens = tokens  # None: --insecure-local, every request is LOCAL (an admin)
        # per identity: rate_limit requests/s, bursts of 2 s worth
        self.limiter = None if rate_limit is None else RateLimiter(rate_limit, 2 * rate_limit)
        self.slot_seconds = slot_seconds  # None: manual clock (POST /v1/tick)
        self.on_fatal = on_fatal
        # Lock order: commit_lock, then lock.  ``lock`` guards the core (short holds);
        # ``commit_lock`` makes group commits one at a time, in seq order.
        self.lock = threading.Lock()
        self.commit_lock = threading.Lock()
        core.group_commit = True
        self.generation = 0  # bumped whenever the core is rebuilt from the log
        self.fatal: str | None = None
        self.last_failure: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.registry = CollectorRegistry()
        self.decision_seconds = Histogram(
            "dmlsched_decision_seconds",
            "Time the scheduler took to decide one slot",
            registry=self.registry,
            buckets=(0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 60),
        )
        self.requests = Counter(
            "dmlsched_requests",
            "HTTP requests by method and status",
            ["method", "status"],
            registry=self.registry,
        )
        self.snapshots = Counter(
            "dmlsched_snapshots",
            "Snapshots of the state taken (a restart reads the latest and the log after it)",
            ["outcome"],
            registry=self.registry,
        )
        self.failed_commits = Counter(
            "dmlsched_failed_commits",
            "Group commits (requests or a slot) that failed and were rolled back",
            registry=self.registry,
        )
        self.registry.register(_StateCollector(self))

    # ---- durability ----------------------------------------------------------------
    def call(self, fn: Callable[[Core], T]) -> T:
        """``fn(core)`` under the lock, answered only once everything it wrote or read
        is committed (503 if that commit fails: see the class docstring)."""
        with self.lock:
            self._healthy()
            out = fn(self.core)
            seq, generation = self.core.seq, self.generation
        self.durable(seq, generation)
        return out

    def _healthy(self) -> None:
        if self.fatal:
            raise HTTPException(503, self.fatal)

    def durable(self, seq: int, generation: int) -> None:
        """Return once record ``seq`` of core ``generation`` is committed; commits every
        queued record with it.  503 if it never will be."""
        with self.commit_lock:
            self._healthy()
            if generation == self.generation and self.core.durable >= seq:
                return  # a concurrent request's group commit took ours along
            if generation != self.generation:
                raise HTTPException(503, f"not kept: {self.last_failure}; retry")
            with self.lock:
                batch = self.core.take_batch()
            if batch:
                try:
                    self.core.store.append_many(batch)
                except Exception as e:
                    with self.lock:
                        self._rollback(e)
                    raise HTTPException(503, f"not kept: {self.last_failure}; retry") from e
                self.core.durable = batch[-1].seq
            if self.core.durable < seq:  # pragma: no cover - every queued record was taken
                raise HTTPException(503, "not kept: the record was not queued; retry")

    def _rollback(self, cause: Exception) -> None:
        """After a failed commit (both locks held): forget what was not kept.

        Memory may hold records the log does not (the failed group, and any queued
        after it): the core is rebuilt from the log and the generation bumped, so
        every request waiting on one of those records gets 503.
        """
        self.failed_commits.inc()
        self.generation += 1
        self.last_failure = f"a commit failed ({type(cause).__name__}: {_first_line(cause)})"
        if isinstance(cause, StoreUnavailable):
            self._die(str(cause))
            return
        try:
            self.core = self.core.reloaded()
        except Exception as e:
            self._die(f"the log cannot be read back after a failed commit: {_first_line(e)}")

    def _die(self, why: str) -> None:
        self.fatal = f"service stopped: {why}"
        self._stop.set()
        if self.on_fatal is not None:
            self.on_fatal(self.fatal)

    # ---- the slot clock ------------------------------------------------------------
    def tick(self, by: str = "clock") -> dict[str, Any]:
        """One slot, committed before anything acts on it (a failed commit: rolled back)."""
        with self.commit_lock, self.lock:
            self._healthy()
            try:
                body = self.core.tick(by)
            except Exception as e:
                self._rollback(e)
                raise HTTPException(503, f"slot not run: {self.last_failure}") from e
            if (
                self.snapshot_every
                and self.core.seq - self.core.snapshot_seq >= self.snapshot_every
            ):
                self._snapshot()
        self.decision_seconds.observe(body["decide_ms"] / 1000.0)
        return body

    def _snapshot(self) -> None:
        """A snapshot after this slot's commit (both locks held).  A failure costs only
        restart time: counted, and tried again ``snapshot_every`` records later."""
        try:
            self.core.snapshot()
        except Exception:
            self.core.snapshot_seq = self.core.seq
            self.snapshots.labels("failed").inc()
            return
        self.snapshots.labels("taken").inc()

    def start_clock(self) -> None:
        if self.slot_seconds is None or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run_clock, name="slot-clock", daemon=True)
        self._thread.start()

    def _run_clock(self) -> None:
        assert self.slot_seconds is not None
        next_at = time.monotonic()
        while not self._stop.is_set():
            # a failed slot was rolled back (healthz and the metrics say so); a fatal
            # failure set _stop
            with contextlib.suppress(HTTPException):
                self.tick()
            next_at += self.slot_seconds
            # a slow decision does not shift the grid; a very slow one skips no slot either
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def stop_clock(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None


class _StateCollector:
    """Gauges read from the core at scrape time."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def collect(self) -> Any:
        with self.service.lock:
            core = self.service.core
            counts = core.counts()
            util = core.utilization()
            up = sum(m.up for m in core.machines)
            down = len(core.machines) - up
            slot, epoch = core.slot, core.epoch
            invalid, mismatches = core.invalid_decisions, core.replay_mismatches
            refused = dict(core.refused)
        jobs = GaugeMetricFamily("dmlsched_jobs", "Jobs by state", labels=["state"])
        for state, n in counts.items():
            jobs.add_metric([state], n)
        yield jobs
        u = GaugeMetricFamily(
            "dmlsched_utilization", "Used / capacity this slot (machines up)", labels=["resource"]
        )
        for r in RESOURCES:
            u.add_metric([r], util[r])
        yield u
        m = GaugeMetricFamily("dmlsched_machines", "Machines by state", labels=["state"])
        m.add_metric(["up"], up)
        m.add_metric(["down"], down)
        yield m
        yield GaugeMetricFamily("dmlsched_slot", "The next slot to run", value=slot)
        yield GaugeMetricFamily("dmlsched_epoch", "Scheduler resets so far + 1", value=epoch + 1)
        yield GaugeMetricFamily(
            "dmlsched_invalid_decisions", "Slots whose decision the engine refused", value=invalid
        )
        refusals = CounterMetricFamily(
            "dmlsched_reports_refused",
            "Progress reports refused (409) since the start, by reason",
            labels=["reason"],
        )
        for reason in REFUSALS:
            refusals.add_metric([reason], refused.get(reason, 0))
        yield refusals
        yield GaugeMetricFamily(
            "dmlsched_replay_mismatches",
            "Replayed decisions that differed from the log at the last start",
            value=mismatches,
        )


class _BodyLimit:
    """413 for a body over ``limit`` bytes, declared or streamed."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for k, v in scope.get("headers", []):
            if k == b"content-length" and v.isdigit() and int(v) > self.limit:
                await _too_large(send, self.limit)
                return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge()
            return msg

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await _too_large(send, self.limit)


class _TooLarge(Exception):
    pass


async def _too_large(send: Send, limit: int) -> None:
    body = b'{"detail":"invalid body: larger than %d bytes"}' % limit
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _one_line(exc: RequestValidationError) -> tuple[int, str]:
    err = exc.errors()[0]
    loc = [str(x) for x in err.get("loc", ())]
    if err.get("type") == "json_invalid":
        return 400, f"invalid body: malformed JSON ({err.get('ctx', {}).get('error', 'bad JSON')})"
    where = ".".join(loc) or "body"
    got = err.get("input")
    got_s = repr(got)
    if len(got_s) > 80:
        got_s = got_s[:77] + "..."
    return 422, f"invalid {where}={got_s} ({err.get('msg', 'invalid')})"


def identity(request: Request, authorization: Annotated[str | None, Header()] = None) -> Identity:
    """Who is asking (401 if nobody the service knows), within its rate limit (429)."""
    service: Service = request.app.state.service
    if service.tokens is None:
        ident = LOCAL
    else:
        scheme, _, given = (authorization or "").partition(" ")
        given = given.strip()
        found = service.tokens.identify(given) if scheme.lower() == "bearer" and given else None
        if found is None:
            raise HTTPException(
                401,
                "invalid Authorization: a Bearer token of a known identity is required",
                {"WWW-Authenticate": "Bearer"},
            )
        ident = found
    if service.limiter is not None:
        wait = service.limiter.take(ident.name)
        if wait > 0:
            raise HTTPException(
                429,
                f"rate limit: {ident.name} may send {service.limiter.rate:g} requests/s",
                {"Retry-After": str(max(1, math.ceil(wait)))},
            )
    return ident


def _role(ident: Identity, *roles: str) -> Identity:
    if not ident.admin and ident.role not in roles:
        allowed = " or ".join(("admin", *roles))
        raise HTTPException(403, f"forbidden: {ident.name} is {ident.role}, not {allowed}")
    return ident


def _admin(ident: Annotated[Identity, Depends(identity)]) -> Identity:
    return _role(ident)


def _user(ident: Annotated[Identity, Depends(identity)]) -> Identity:
    return _role(ident, "user")


def _agent(ident: Annotated[Identity, Depends(identity)]) -> Identity:
    return _role(ident, "agent")


# the caller's identity, if its role may use the endpoint (an admin may use every one)
Admin = Annotated[Identity, Depends(_admin)]
User = Annotated[Identity, Depends(_user)]
Agent = Annotated[Identity, Depends(_agent)]


def create_app(service: Service, *, allowed_hosts: Sequence[str] | None = None) -> FastAPI:
    """The FastAPI application serving ``service``.

    ``allowed_hosts``: the Host header values accepted (DNS rebinding: a page on
    another site that resolves its own name to this service's address cannot
    talk to it); ``None`` accepts any (in-process tests).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        service.start_clock()
        yield
        service.stop_clock()

    app = FastAPI(
        title="dmlsched service",
        version="1",
        summary="A live online scheduler for parameter-server training jobs.",
        lifespan=lifespan,
    )
    app.state.service = service
    app.add_middleware(_BodyLimit, limit=MAX_BODY)
    if allowed_hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))

    @app.middleware("http")
    async def count(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Any:
        response = await call_next(request)
        service.requests.labels(request.method, str(response.status_code)).inc()
        return response

    @app.exception_handler(RequestValidationError)
    async def bad_body(request: Request, exc: RequestValidationError) -> JSONResponse:
        status, line = _one_line(exc)
        return JSONResponse({"detail": line}, status_code=status)

    @app.exception_handler(InvalidInput)
    async def bad_input(request: Request, exc: InvalidInput) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=422)

    @app.exception_handler(InvalidReport)
    async def bad_report(request: Request, exc: InvalidReport) -> JSONResponse:
        return JSONResponse({"detail": str(exc)}, status_code=409)

    @app.exception_handler(StoreUnavailable)
    async def store_gone(request: Request, exc: StoreUnavailable) -> JSONResponse:
        with service.lock:
            if not service.fatal:
                service._die(str(exc))
        return JSONResponse({"detail": service.fatal}, status_code=503)

    def own_job(core: Core, ident: Identity, job_id: int) -> JobState:
        js = core.jobs.get(job_id)
        if js is None:
            raise HTTPException(404, f"invalid job_id={job_id} (no such job)")
        if not ident.admin and js.owner != ident.name:
            raise HTTPException(403, f"forbidden: job {job_id} belongs to another user")
        return js

    def own_machine(core: Core, ident: Identity, name: str) -> Machine:
        if not ident.admin and ident.machine != name:
            raise HTTPException(
                403, f"forbidden: agent {ident.name} acts for machine {ident.machine} only"
            )
        m = core.by_name.get(name)
        if m is None:
            raise HTTPException(404, f"invalid machine={name!r} (not declared by an admin)")
        return m

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def dashboard() -> str:
        """The dashboard's page (its data come from /v1/state, with a token)."""
        return resources.files("dmlsched.service").joinpath("dashboard.html").read_text()

    @app.get("/healthz")
    def healthz() -> JSONResponse:
        """Liveness for supervisors and load balancers: no token needed."""
        with service.lock:
            core = service.core
            body: dict[str, Any] = {
                "status": "failed" if service.fatal else "ok",
                "slot": core.slot,
                "seq": core.seq,
                "scheduler": core.config.scheduler,
                "clock": "manual" if service.slot_seconds is None else f"{service.slot_seconds}s",
            }
        if service.fatal:
            body["detail"] = service.fatal
        elif service.last_failure:
            body["last_failure"] = service.last_failure
        return JSONResponse(body, status_code=503 if service.fatal else 200)

    @app.get("/metrics", include_in_schema=False)
    def metrics(ident: User) -> Response:
        return Response(generate_latest(service.registry), media_type=CONTENT_TYPE_LATEST)

    @app.post("/v1/jobs", status_code=201)
    def submit(
        req: JobRequest,
        ident: User,
        idempotency_key: Annotated[str | None, Header(max_length=200)] = None,
    ) -> JSONResponse:
        """Submit a job (yours); it arrives at the next slot.  A repeated Idempotency-Key
        returns the job it made (200) instead of a second one."""

        def do(core: Core) -> tuple[dict[str, Any], bool]:
            js, created = core.submit(req, idempotency_key, by=ident.name)
            return js.summary(core.machines), created

        body, created = service.call(do)
        return JSONResponse(body, status_code=201 if created else 200)

    @app.get("/v1/jobs")
    def list_jobs(
        ident: User,
        state: Annotated[str | None, Query(pattern="^[a-z]+$")] = None,
        since_id: Annotated[int, Query(ge=-1)] = -1,
        limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = PAGE,
    ) -> list[dict[str, Any]]:
        """Jobs with id > ``since_id`` (yours; an admin's: everyone's), ``limit`` at most:
        page on with the last id."""
        with service.lock:
            core = service.core
            if ident.admin:
                ids: Iterable[int] = range(since_id + 1, len(core.jobs))
            else:
                mine = core.by_owner.get(ident.name, [])
                ids = mine[bisect.bisect_right(mine, since_id) :]
            out = []
            for j in ids:
                js = core.jobs[j]
                if state is None or js.state == state:
                    out.append(js.summary(core.machines))
                    if len(out) >= limit:
                        break
            return out

    @app.get("/v1/jobs/{job_id}")
    def get_job(job_id: int, ident: User) -> dict[str, Any]:
        with service.lock:
            core = service.core
            return own_job(core, ident, job_id).summary(core.machines)

    @app.delete("/v1/jobs/{job_id}", status_code=202)
    def cancel(job_id: int, ident: User) -> dict[str, Any]:
        """Cancel a job of yours: it stops at the next slot (the scheduler sees it finished)."""

        def do(core: Core) -> dict[str, Any]:
            own_job(core, ident, job_id)
            return core.cancel(job_id, by=ident.name).summary(core.machines)

        return service.call(do)

    @app.post("/v1/machines", status_code=201)
    def register(req: MachineRequest, ident: Agent) -> dict[str, Any]:
        """An admin declares a machine and its capacity (or re-declares it: back up); the
        machine's agent joins it, offering at most the declared capacity.  The cluster
        changes at the next slot."""

        def do(core: Core) -> dict[str, Any]:
            if ident.admin and req.capacity is not None:
                return core.machine_summary(core.register(req, by=ident.name))
            m = own_machine(core, ident, req.name)  # a join (an admin may join for an agent)
            if req.capacity is not None:
                for r, (got, cap) in enumerate(zip(req.capacity, m.declared, strict=True)):
                    if got > cap:
                        raise HTTPException(
                            403,
                            f"forbidden: capacity[{RESOURCES[r]}]={got:g} above the "
                            f"{cap:g} an admin declared for {m.name}",
                        )
            return core.machine_summary(core.join(req.name, req.capacity, by=ident.name))

        return service.call(do)

    @app.get("/v1/machines")
    def machines(ident: User) -> list[dict[str, Any]]:
        with service.lock:
            return [service.core.machine_summary(m) for m in service.core.machines]

    @app.get("/v1/allocation")
    def allocation(ident: User) -> dict[str, Any]:
        """This slot's placements: job id → machine name → [workers, PSs]."""
        with service.lock:
            return service.core.allocation()

    @app.get("/v1/events")
    def events(
        ident: Admin,
        since: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
    ) -> list[dict[str, Any]]:
        """The log (the audit trail: each record says ``by`` whom) from seq > ``since``."""
        return [
            {"seq": r.seq, "kind": r.kind, **r.body}
            for r in service.core.store.records(since=since, limit=limit)
        ]

    @app.post("/v1/tick")
    def tick(
        ident: Admin,
        n: Annotated[int, Query(ge=1, le=10_000)] = 1,
    ) -> dict[str, Any]:
        """Manual clock only: run ``n`` slots now."""
        if service.slot_seconds is not None:
            raise HTTPException(409, "invalid clock=wall (POST /v1/tick needs --manual-clock)")
        body: dict[str, Any] = {}
        for _ in range(n):
            body = service.tick(by=ident.name)
        return {"slot": body["slot"], "error": body["error"], "decide_ms": body["decide_ms"]}

    @app.post("/v1/simulate")
    def simulate(
        body: dict[str, Any],
        ident: User,
        horizon: Annotated[int, Query(ge=1, le=10_000)] = DEFAULT_HORIZON,
    ) -> dict[str, Any]:
        """What if: one job (a ``POST /v1/jobs`` body) or ``{"jobs": [...]}`` submitted now —
        admitted or not, why, where, the start and completion slot, the utility.  Nothing
        is committed: the answer comes from a copy of the live state."""
        raw = body["jobs"] if isinstance(body.get("jobs"), list) else [body]
        reqs = []
        for k, item in enumerate(raw):
            try:
                reqs.append(JobRequest.model_validate(item))
            except ValidationError as e:
                err = e.errors()[0]
                where = ".".join(["jobs", str(k), *map(str, err.get("loc", ()))])
                got = repr(err.get("input"))[:80]
                raise HTTPException(422, f"invalid {where}={got} ({err['msg']})") from None
        with service.lock:
            service._healthy()
            clone = whatif.copy_core(service.core)
            slot = service.core.slot
        preds = whatif.run(clone, reqs, horizon=horizon, by=ident.name)
        return {
            "slot": slot,
            "horizon": horizon,
            "scheduler": clone.config.scheduler,
            "jobs": [p.body() for p in preds],
        }

    @app.get("/v1/state", include_in_schema=False)
    def state(ident: User, jobs: Annotated[int, Query(ge=0, le=10_000)] = 200) -> dict[str, Any]:
        """What the dashboard draws: machines, the latest jobs (yours; an admin's: all),
        recent allocations."""
        with service.lock:
            core = service.core
            ids = list(core.jobs) if ident.admin else core.by_owner.get(ident.name, [])
            recent = [core.jobs[j] for j in ids[-jobs:]] if jobs else []
            return {
                "slot": core.slot,
                "epoch": core.epoch,
                "scheduler": core.config.scheduler,
                "identity": {"name": ident.name, "role": ident.role},
                "counts": core.counts(),
                "utilization": core.utilization(),
                "machines": [core.machine_summary(m) for m in core.machines],
                "jobs": [js.summary(core.machines) for js in recent],
                "history": list(core.history),
            }

    @app.post("/v1/agents/{name}/heartbeat")
    def heartbeat(name: str, ident: Agent) -> dict[str, Any]:
        """An agent is alive; returns its machine's part of this slot's allocation."""
        with service.lock:  # writes nothing to the log, reads only committed slots
            service._healthy()
            own_machine(service.core, ident, name)
            service.core.heartbeat(name)
            return service.core.assignment(name)

    @app.post("/v1/agents/{name}/progress")
    def progress(name: str, rep: ProgressReport, ident: Agent) -> dict[str, Any]:
        """Work measured on this machine; credited at the end of the slot (measured mode)."""

        def do(core: Core) -> dict[str, Any]:
            own_machine(core, ident, name)
            new = core.report(name, rep.model_dump(), by=ident.name)
            return {"accepted": True, "new": new, "seq": core.seq}

        return service.call(do)

    return app
