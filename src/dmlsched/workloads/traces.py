"""Real traces in ``<repo>/../shared/traces/``: loaders, arrival scaling, cluster jobs.

Loaders (one per format, validated at the boundary)
---------------------------------------------------
:func:`load_trace` reads one folder (or one file of it) and returns a frozen
:class:`Trace` of per-job :class:`TraceRow` sorted by arrival.  Every row is
checked: field count, numbers parse and are finite and in range.  A bad row
raises :class:`~dmlsched.errors.InvalidInput` whose ``where`` is
``"<file>:<line>"`` and whose ``field`` is the column name; with
``skip_bad_rows=True`` it is skipped and counted in ``Trace.skipped``.
Bytes that are not UTF-8 spoil only the field they are in (same error); a
UTF-8 byte-order mark before the header is ignored.

Folders: a format split into parts by the trace itself is read whole —
Google's ``job_events*``/``task_events*`` parts (all of them, by name; a job
is the first SUBMIT seen) and PAI's per-job files, recognised by their
header, not their name.  Philly files and the Alibaba pod and node lists
cannot safely be joined (a sample beside its full file would count every job
twice), so a folder with several matching files is refused, listing them:
pass one with ``--trace FILE`` (``--nodes FILE`` for a node list).

Nothing degrades silently: what the loader had to leave out or could not
use is in ``Trace.notes`` (a fallback starts with ``WARNING: `` and the CLI
prints it on stderr) and ends in the workload's notes, ``config.json`` and
``summary.md``.  :func:`trace_root` points every default folder at another
trace set (``reproduce --traces DIR``).

* ``philly`` (``philly-pollux/philly*.csv``, header
  ``timestamp,duration,num_gpus,gpu_time,cluster``): arrival = ``timestamp``
  (``YYYY-MM-DD HH:MM:SS``, seconds since the file's earliest timestamp;
  the file is not sorted), workers = ``num_gpus`` (≥ 1), run time =
  ``duration`` s.  ``gpu_time`` must equal ``duration × num_gpus`` (the
  README checks it on every source row), so a corrupted number is caught.
* ``google`` (``google-2011/job_events*.csv`` + ``task_events*.csv``, no
  header, times in µs): one row per job with a SUBMIT (type 0) event;
  arrival = first SUBMIT time; run time = last end event (FAIL 3, FINISH 4,
  KILL 5, LOST 6) − the last SCHEDULE (1) before it, when both fall in the
  window, else unknown; workers = distinct task indices with a task SUBMIT
  event (the task window is only 5 minutes, so most jobs have none →
  unknown).  Times 0 and 2^63−1 (before/after the window) are left out and
  counted.  Unit check: the 2011 window opens at 600 s, so any other time
  below 600,000,000 means the file is not in µs (seconds or ms would pass
  every row check and squeeze or stretch every run time a million- or
  thousand-fold): InvalidInput naming file:line, even with ``skip_bad_rows``.
  When no submitted job has task events (the task file's window misses the
  job file's), a warning note gives both windows.
* ``alibaba`` (``alibaba-gpu-v2023/openb_pod_list*.csv`` + node list
  ``openb_node_list*.csv`` beside it, or ``nodes=`` / ``--nodes PATH``
  anywhere; :func:`load_nodes` reads a node list alone): one row per pod;
  arrival = ``creation_time`` s; workers = ``num_gpu`` (0 → one CPU-only
  worker); run time = ``deletion_time − scheduled_time`` for
  scheduled pods whose deletion is not the file's largest ``deletion_time``
  (README: that value looks like the end of observation, i.e. censored);
  per-pod cores, memory GB and GPU share (``gpu_milli``/1000 for a shared
  GPU).  ``Trace.nodes`` = (GPUs, cores, memory GB) per node of the list.
* ``pai`` (every CSV of ``alibaba-pai-minibatch/`` with the header
  ``,worker,gpu,time,batch_time_norm``): not an arrival trace,
  so ``rows`` is empty; ``Trace.stragglers`` holds, per (job, iteration)
  with all workers reported, max ÷ mean mini-batch time across the job's
  workers — under BSP the slowest worker sets every iteration's pace, so
  this is the factor by which a job's time per sample exceeds the mean
  worker's.

Arrivals
--------
:func:`scale_arrivals` samples ``n_jobs`` arrival times (each row
``n_jobs // N`` times, plus ``n_jobs mod N`` rows without replacement, so a
sample larger than the trace tiles it) and maps them linearly onto slots
``[0, T)``: slot = ⌊(a − a_min) / (a_max − a_min) · T⌋, capped at T − 1,
where a_min/a_max span the *whole* trace (so the sample keeps the trace's
daily pattern).  Decision: Alibaba's first 115 days hold only 27 pods
(README: sparse warm-up), which would squeeze every job into the last few
slots; arrivals of pods created before day 115 are dropped from the
mapping (:data:`WARMUP_SECONDS`).

Mapping to ``cluster`` jobs (:func:`trace_cluster`, PD-ORS journal, sync)
-------------------------------------------------------------------------
Each sampled row becomes one sync :class:`ClusterJob`.  Every job is first
drawn by :func:`dmlsched.workloads.synthetic.random_job` with the paper's
ranges and the run's generator (E, K, F, g, τ, γ, α, β, b, utility); the
fields the trace has then replace the drawn ones:

* arrival — scaled as above (T slots; one slot stays one hour, run times are
  *not* compressed);
* workers W — GPUs (Philly, Alibaba) or tasks (Google).  Jobs without a
  count (most Google jobs) get one resampled from the trace's own jobs with
  a count.  If no job of the trace has a count (a task file that does not
  overlap the job file), W = 1 for them — a documented fallback that keeps
  the trace's run times (resampling from nothing, or dropping the run times
  for drawn sizes, would change the workload silently) — and a warning
  note says so.  F = max(F_drawn, W), so Eq. (4) allows the trace's W;
* run time → work: E·K = run time (slots) × the speed model's rate
  (:func:`dmlsched.model.speed.pdors.sync_rate`) with W workers and
  ⌈W/γ⌉ PSs, internal (b^(i), Fact 1) iff that bundle fits on one machine
  of the cluster, else external.  E stays drawn from [50, 200]; K = round(work/E)
  (if that is < 1, E = max(1, round(work)), K = 1).  So, given the trace's
  W and placement, the job runs for its trace run time.  Rows without a run
  time keep the drawn E and K.  W is not imposed on schedulers (FIFO, for
  one, draws its own counts): it calibrates the work and bounds F;
* Alibaba only: per-worker demand α = pod request ÷ max(1, num_gpu) for
  GPU (shared GPU: ``gpu_milli``/1000), cores and memory GB; storage stays
  drawn; the cluster is the node list (GPUs, cores, memory GB, and 180 GB
  storage — 18 × the paper's 10 GB, as in the synthetic cluster), all
  1,213 nodes, or ``machines`` nodes sampled without replacement (tiled
  beyond 1,213, like rows); pods whose per-worker request fits no node of
  that cluster are not sampled;
* straggler (optional, PAI) — a factor drawn from ``Trace.stragglers``;
  the speed model multiplies τ by it, and the work is computed *with* it
  so the run time is still the trace's.

Drawn PS demands are capped per resource at the largest node of the
(sampled) Alibaba cluster so every job stays placeable.  Google's CPU and
memory requests are normalized (README), so they are not used as demands.

Philly and Google clusters are ``machines`` identical machines with 18 ×
the paper's per-worker maxima (as :func:`synthetic_cluster`).  The
workload's ``notes`` say which fields came from the trace and how many rows
were skipped.

Registered workloads ``cluster``/``philly|google|alibaba``: ``jobs`` (default
100) jobs sampled from the trace, ``slots`` (80), ``machines`` (30; Alibaba:
the whole node list), ``trace`` = folder or file overriding
:func:`default_trace_dir`; ``extra``: ``skip_bad_rows`` (bool), ``nodes``
(Alibaba node list, file or folder),
``straggler`` (bool: draw PAI factors), ``straggler_trace`` (PAI folder),
``mix`` (utility class shares, as synthetic).  Sync only.
"""

from __future__ import annotations

import contextlib
import csv
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.cluster import SLOT_SECONDS, Cluster, ClusterJob, ClusterWorkload
from dmlsched.model.speed.pdors import comm_slots, sync_rate, sync_worker_rates
from dmlsched.model.utility import Sigmoid
from dmlsched.workloads.builders import WARNING, WorkloadParams, register_workload
from dmlsched.workloads.draws import SyncDraws, sync_job_draws
from dmlsched.workloads.synthetic import DEFAULT_MIX, INT_EXT_RATIO, machine_capacity, random_job

__all__ = [
    "GOOGLE_WINDOW_US",
    "KINDS",
    "WARMUP_SECONDS",
    "Trace",
    "TraceRow",
    "arrival_rows",
    "arrivals_with_notes",
    "default_trace_dir",
    "load_nodes",
    "load_trace",
    "missing_trace",
    "sample_rows",
    "scale_arrivals",
    "trace_arrivals",
    "trace_cluster",
    "trace_root",
    "traces_root",
]

KINDS: dict[str, str] = {
    "philly": "philly-pollux",
    "google": "google-2011",
    "alibaba": "alibaba-gpu-v2023",
    "pai": "alibaba-pai-minibatch",
}
ARRIVAL_KINDS = ("philly", "google", "alibaba")
# Arrivals before this (trace seconds) are a sparse warm-up, see module docstring.
WARMUP_SECONDS: dict[str, float] = {"alibaba": 115 * 86400.0}

_REPO = Path(__file__).resolve().parents[3]


def _find_shared() -> Path:
    """``<repo>/../shared/traces``; a git worktree nested deeper finds it further up."""
    for up in _REPO.parents:
        if (up / "shared" / "traces").is_dir():
            return up / "shared" / "traces"
    return _REPO.parent / "shared" / "traces"


_SHARED = _find_shared()
_ROOT: list[Path] = []  # trace_root() overrides, innermost last
_MIB_PER_GB = 1024.0
_T = TypeVar("_T")
_LIST_MAX = 5  # file names listed in a refusal


@contextmanager
def trace_root(path: Path | str | None) -> Iterator[None]:
    """Within the ``with`` body, :func:`default_trace_dir` looks under ``path``
    (a folder laid out like ``../shared/traces``) instead; ``None`` changes nothing.

    ``reproduce --traces DIR`` uses it around every cell (the runner passes the
    folder to each worker with the cell, so it also holds in a process pool).
    """
    if path is None:
        yield
        return
    root = Path(path).expanduser().resolve()
    if not root.is_dir():
        raise InvalidInput("traces", str(root), "an existing folder laid out like ../shared/traces")
    _ROOT.append(root)
    try:
        yield
    finally:
        _ROOT.pop()


def traces_root() -> Path:
    """The folder trace kinds are looked up in (``../shared/traces`` unless overridden)."""
    return _ROOT[-1] if _ROOT else _SHARED


@dataclass(frozen=True)
class TraceRow:
    """One job (pod) of a trace; ``None`` where the trace does not say."""

    arrival_s: float  # seconds on the trace's time axis
    workers: int | None  # GPUs (philly, alibaba) or tasks (google)
    runtime_s: float | None
    line: int  # 1-based line in the source file (header = line 1)
    cpu: float | None = None  # cores requested (alibaba)
    mem_gb: float | None = None  # memory requested, GB (alibaba)
    gpu_share: float | None = None  # GPUs per worker (alibaba)


@dataclass(frozen=True)
class Trace:
    """A loaded trace: rows sorted by (arrival, line), provenance and counts.

    ``notes`` are the loader's own findings (e.g. Google task events that do
    not overlap the job events); those starting with :data:`WARNING` are
    fallbacks the user must hear about (:func:`warning_notes`).
    """

    kind: str
    path: Path
    rows: tuple[TraceRow, ...]
    skipped: int
    fields: tuple[str, ...]  # job fields that came from the trace
    nodes: tuple[tuple[float, float, float], ...] = ()  # (GPUs, cores, mem GB), alibaba
    stragglers: tuple[float, ...] = ()  # max/mean mini-batch time per iteration, pai
    files: tuple[Path, ...] = ()  # every file read
    notes: tuple[str, ...] = ()

    def arrivals(self) -> np.ndarray:
        return np.array([r.arrival_s for r in self.rows], dtype=float)

    def describe(self) -> str:
        """One line: which files, how many rows, how many skipped."""
        files = self.files or (self.path,)
        where = str(files[0]) if len(files) == 1 else f"{len(files)} files in {files[0].parent}"
        n, bad = len(self.rows), self.skipped
        return f"trace {self.kind}: {where} ({n} rows, {bad} bad rows skipped)"


def missing_trace(kind: str, flag: str) -> InvalidInput:
    """The error for a trace that is not where it is looked for: where to put it, where
    to get it (docs/data.md), and the flag that points elsewhere."""
    from dmlsched.portable import portable_paths

    # the default folder reads as ../shared/traces/...; a folder the user named, as named
    folder = traces_root() / KINDS[kind]
    where = str(folder) if _ROOT else portable_paths(str(folder))
    return InvalidInput(
        flag,
        where,
        f"the {kind} trace in that folder — docs/data.md says where to get it — "
        f"or --{flag} PATH (reproduce: --traces DIR)",
    )


def default_trace_dir(kind: str) -> Path | None:
    """``<root>/<folder>`` for ``kind`` if it exists, else ``None``; root = :func:`traces_root`."""
    if kind not in KINDS:
        raise InvalidInput("trace kind", kind, " | ".join(KINDS))
    d = traces_root() / KINDS[kind]
    return d if d.is_dir() else None


# ---------------------------------------------------------------- row parsing


class _Rows:
    """Validated CSV rows of one file; bad rows raise or are counted."""

    def __init__(self, path: Path, skip_bad_rows: bool) -> None:
        self.path = path
        self.skip = skip_bad_rows
        self.skipped = 0

    def read(
        self, columns: tuple[str, ...], header: bool, parse: Callable[[dict[str, str], str], _T]
    ) -> Iterator[tuple[int, _T]]:
        """Yield (line, parse(row, where)) per data line; ``columns`` name the fields."""
        try:
            # utf-8-sig: a byte-order mark (Excel's "CSV UTF-8") is not part of the header;
            # surrogateescape: a bad byte spoils only its own field, reported with its line
            fh = self.path.open(newline="", encoding="utf-8-sig", errors="surrogateescape")
        except OSError as e:
            raise InvalidInput("trace", str(self.path), f"a readable file ({e.strerror})") from e
        with fh:
            reader = csv.reader(fh)
            if header:
                got = tuple(self._next(reader) or ())
                if got != columns:
                    raise InvalidInput("header", ",".join(got), ",".join(columns), f"{self.path}:1")
            while True:
                try:
                    fields = self._next(reader)
                except InvalidInput:
                    if not self.skip:
                        raise
                    self.skipped += 1
                    continue
                if fields is None:
                    return
                line = reader.line_num
                if not fields or fields == [""]:
                    continue
                where = f"{self.path}:{line}"
                try:
                    if len(fields) != len(columns):
                        name = columns[min(len(fields), len(columns) - 1)]
                        raise InvalidInput(
                            name,
                            ",".join(fields)[-40:],
                            f"{len(columns)} fields, got {len(fields)}",
                            where,
                        )
                    for name, text in zip(columns, fields, strict=True):
                        if not text.isascii():
                            _check_utf8(name, text, where)
                    yield line, parse(dict(zip(columns, fields, strict=True)), where)
                except InvalidInput:
                    if not self.skip:
                        raise
                    self.skipped += 1

    def _next(self, reader: Any) -> list[str] | None:
        """The next CSV record, ``None`` at the end; a CSV syntax error is a bad row."""
        try:
            return next(reader)
        except StopIteration:
            return None
        except csv.Error as e:
            where = f"{self.path}:{reader.line_num + 1}"
            raise InvalidInput("row", str(e), "a CSV record", where) from None


def _check_utf8(name: str, text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raw = text.encode("utf-8", errors="surrogateescape")
        raise InvalidInput(name, raw[:40], "UTF-8 text", where) from None


def _num(
    row: dict[str, str],
    name: str,
    where: str,
    *,
    lo: float = 0.0,
    integer: bool = False,
    optional: bool = False,
) -> float | None:
    text = row[name].strip()
    if optional and text == "":
        return None
    try:
        v = float(text)
    except ValueError:
        raise InvalidInput(name, text, "a number", where) from None
    if not math.isfinite(v) or v < lo or (integer and v != int(v)):
        raise InvalidInput(
            name, text, f"{'an integer' if integer else 'a number'} >= {lo:g}", where
        )
    return v


def _req(v: float | None) -> float:
    assert v is not None  # only for non-optional fields
    return v


# ---------------------------------------------------------------- files of a folder


def _names(files: Sequence[Path]) -> str:
    names = [f.name for f in files[:_LIST_MAX]]
    return ", ".join(names) + (f", … ({len(files)} in all)" if len(files) > _LIST_MAX else "")


def _all(folder: Path, pattern: str, field: str = "trace") -> list[Path]:
    """Every file of ``folder`` matching ``pattern``, by name; none is bad input."""
    hits = sorted(f for f in folder.glob(pattern) if f.is_file())
    if not hits:
        raise InvalidInput(field, str(folder / pattern), "an existing trace file")
    return hits


def _only(folder: Path, pattern: str, field: str = "trace") -> Path:
    """The one file of ``folder`` matching ``pattern``; several are refused, listed.

    For Philly and the Alibaba lists several files cannot simply be joined
    (a sample beside its full file would count every job twice), so the user
    picks one with ``--trace FILE`` (``--nodes FILE`` for a node list).
    """
    hits = _all(folder, pattern, field)
    if len(hits) > 1:
        flag = "--nodes" if field == "nodes" else "--trace"
        raise InvalidInput(
            field,
            str(folder),
            f"one {pattern} file, found {len(hits)}: {_names(hits)}; pass one with {flag} FILE",
        )
    return hits[0]


def _main_file(path: Path, pattern: str, companion: str | None = None) -> Path:
    """``path`` itself if it is a file (unless it is the companion file, e.g. the
    node list), else the one file matching ``pattern`` in the folder."""
    if path.is_file() and not (companion and path.match(companion)):
        return path
    return _only(path.parent if path.is_file() else path, pattern)


def _header(path: Path) -> str:
    """First line of ``path`` without a byte-order mark or line end ('' if unreadable)."""
    try:
        with path.open("rb") as f:
            first = f.readline(4096)
    except OSError:
        return ""
    return first.decode("utf-8", errors="replace").removeprefix("\ufeff").rstrip("\r\n")


_PHILLY_COLS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")


def _load_philly(path: Path, skip: bool, nodes: Path | None) -> Trace:
    f = _main_file(path, "philly*.csv")
    rows = _Rows(f, skip)

    def parse(r: dict[str, str], where: str) -> tuple[datetime, float, int]:
        try:
            ts = datetime.strptime(r["timestamp"], "%Y-%m-%d %H:%M:%S")
        except ValueError:
            raise InvalidInput("timestamp", r["timestamp"], "YYYY-MM-DD HH:MM:SS", where) from None
        dur = _req(_num(r, "duration", where))
        gpus = int(_req(_num(r, "num_gpus", where, lo=1, integer=True)))
        gpu_time = _req(_num(r, "gpu_time", where))
        if abs(gpu_time - dur * gpus) > 1e-6 * max(1.0, gpu_time):
            raise InvalidInput(
                "gpu_time", r["gpu_time"], f"duration x num_gpus = {dur * gpus:g}", where
            )
        return ts, dur, gpus

    parsed = list(rows.read(_PHILLY_COLS, True, parse))
    out: list[TraceRow] = []
    if parsed:
        t0 = min(p[0] for _, p in parsed)
        out = [
            TraceRow((ts - t0).total_seconds(), gpus, dur, line) for line, (ts, dur, gpus) in parsed
        ]
    return _trace("philly", f, out, rows.skipped, ("arrival", "workers", "runtime"), (f,))


_JOB_COLS = (
    "time",
    "missing_info",
    "job_id",
    "event_type",
    "user",
    "scheduling_class",
    "job_name",
    "logical_job_name",
)
_TASK_COLS = (
    "time",
    "missing_info",
    "job_id",
    "task_index",
    "machine_id",
    "event_type",
    "user",
    "scheduling_class",
    "priority",
    "cpu_request",
    "memory_request",
    "disk_request",
    "different_machines",
)
# Google 2011 times are µs; the trace window opens at 600 s, 0 means "before the
# window" and 2^63 - 1 "after it" (README).  Any other time below the opening is
# not in µs: seconds or milliseconds would pass every per-row check unnoticed.
GOOGLE_WINDOW_US = 600_000_000
_GOOGLE_AFTER = 2**63 - 1


def _google_events(
    files: Sequence[Path], cols: tuple[str, ...], skip: bool, parse: Callable[..., Any]
) -> tuple[list[tuple[Any, ...]], int]:
    """Parsed events of every file, in file order; checks the time unit per file."""
    events: list[tuple[Any, ...]] = []
    skipped = 0
    for f in files:
        rows = _Rows(f, skip)
        first_low: tuple[int, float] | None = None
        for line, ev in rows.read(cols, False, parse):
            t = ev[0]
            if 0 < t < GOOGLE_WINDOW_US and first_low is None:
                first_low = (line, t)
            events.append((*ev, line))
        skipped += rows.skipped
        if first_low is not None:  # a unit error spoils the whole file: never skipped
            raise InvalidInput(
                "time",
                int(first_low[1]),
                f"microseconds >= {GOOGLE_WINDOW_US} (the 2011 trace window opens at 600 s),"
                " 0 or 2^63-1; are the times in seconds or milliseconds?",
                f"{f}:{first_low[0]}",
            )
    return events, skipped


def _span(times: Sequence[float]) -> str:
    return f"{min(times) / 1e6:g}-{max(times) / 1e6:g} s" if times else "none"


def _load_google(path: Path, skip: bool, nodes: Path | None) -> Trace:
    if path.is_file() and not path.match("task_events*.csv"):
        jfiles = [path]
    else:
        jfiles = _all(path.parent if path.is_file() else path, "job_events*.csv")
    tfiles = _all(jfiles[0].parent, "task_events*.csv")

    def parse_job(r: dict[str, str], where: str) -> tuple[int, int, int]:
        t = int(_req(_num(r, "time", where, integer=True)))
        job = int(_req(_num(r, "job_id", where, integer=True)))
        ev = int(_req(_num(r, "event_type", where, integer=True)))
        if ev > 8:
            raise InvalidInput("event_type", r["event_type"], "0..8", where)
        return t, job, ev

    def parse_task(r: dict[str, str], where: str) -> tuple[int, int, int, int]:
        t = int(_req(_num(r, "time", where, integer=True)))
        job = int(_req(_num(r, "job_id", where, integer=True)))
        task = int(_req(_num(r, "task_index", where, integer=True)))
        ev = int(_req(_num(r, "event_type", where, integer=True)))
        if ev > 8:
            raise InvalidInput("event_type", r["event_type"], "0..8", where)
        return t, job, task, ev

    jevents, jskipped = _google_events(jfiles, _JOB_COLS, skip, parse_job)
    tevents, tskipped = _google_events(tfiles, _TASK_COLS, skip, parse_task)
    submit: dict[int, tuple[float, int]] = {}
    sched: dict[int, float] = {}
    runtime: dict[int, float] = {}
    outside = 0
    for t, job, ev, line in jevents:
        in_window = 0 < t < _GOOGLE_AFTER
        if not in_window:
            outside += ev == 0
            continue
        if ev == 0 and job not in submit:
            submit[job] = (t / 1e6, line)
        elif ev == 1:
            sched[job] = t / 1e6
        elif ev in (3, 4, 5, 6) and job in sched:
            runtime[job] = t / 1e6 - sched[job]
    tasks: dict[int, set[int]] = {}
    for _t, job, task, ev, _line in tevents:
        if ev == 0:
            tasks.setdefault(job, set()).add(task)
    out = [
        TraceRow(t, len(tasks[j]) if j in tasks else None, runtime.get(j), line)
        for j, (t, line) in submit.items()
    ]
    notes = []
    if outside:
        notes.append(f"{outside} SUBMIT events at time 0 or 2^63-1 (outside the window) left out")
    if submit and not any(j in tasks for j in submit):
        jt = [t for t, *_ in jevents if 0 < t < _GOOGLE_AFTER]
        tt = [t for t, *_ in tevents if 0 < t < _GOOGLE_AFTER]
        notes.append(
            f"{WARNING}no submitted job has task SUBMIT events: task_events cover "
            f"{_span(tt)}, job_events {_span(jt)}; jobs get no worker count from the trace"
        )
    files = (*jfiles, *tfiles)
    where = jfiles[0] if len(jfiles) == 1 else jfiles[0].parent
    fields = ("arrival", "workers", "runtime")
    trace = _trace("google", where, out, jskipped + tskipped, fields, files)
    return replace(trace, notes=tuple(notes))


_POD_COLS = (
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
)
_NODE_COLS = ("sn", "cpu_milli", "memory_mib", "gpu", "model")


def _node_file(near: Path, nodes: Path | None) -> Path:
    """The Alibaba node list: ``nodes`` (a file, or a folder holding one), else the
    one ``openb_node_list*.csv`` in ``near``'s folder."""
    if nodes is not None:
        n = Path(nodes).expanduser()
        if n.is_file():
            return n
        if not n.is_dir():
            raise InvalidInput("nodes", str(n), "an existing node-list file or folder")
        return _only(n, "openb_node_list*.csv", "nodes")
    folder = near.parent if near.is_file() else near
    if not any(folder.glob("openb_node_list*.csv")):
        raise InvalidInput(
            "nodes",
            str(folder / "openb_node_list*.csv"),
            "a node list beside the pod list, or --nodes PATH",
        )
    return _only(folder, "openb_node_list*.csv", "nodes")


def load_nodes(
    path: Path | str | None = None, *, skip_bad_rows: bool = False
) -> tuple[tuple[tuple[float, float, float], ...], int, Path]:
    """(GPUs, cores, memory GB) per node of an Alibaba node list, rows skipped, file.

    ``path``: the node-list file or a folder holding one (default: the
    Alibaba trace folder).  The pod list is not needed.
    """
    if path is None:
        d = default_trace_dir("alibaba")
        if d is None:
            raise missing_trace("alibaba", "nodes")
        path = d
    p = Path(path).expanduser().resolve()
    f = _node_file(p, p)
    rows = _Rows(f, skip_bad_rows)

    def parse_node(r: dict[str, str], where: str) -> tuple[float, float, float]:
        cpu = _req(_num(r, "cpu_milli", where, lo=1)) / 1000.0
        mem = _req(_num(r, "memory_mib", where, lo=1)) / _MIB_PER_GB
        gpu = _req(_num(r, "gpu", where, integer=True))
        return gpu, cpu, mem

    nodes = tuple(n for _, n in rows.read(_NODE_COLS, True, parse_node))
    if not nodes:
        raise InvalidInput("nodes", str(f), "at least one valid node row")
    return nodes, rows.skipped, f


def _load_alibaba(path: Path, skip: bool, nodes: Path | None) -> Trace:
    pf = _main_file(path, "openb_pod_list*.csv", "openb_node_list*.csv")
    node_list, node_skipped, nf = load_nodes(_node_file(pf, nodes), skip_bad_rows=skip)

    def parse_pod(r: dict[str, str], where: str) -> tuple[float, ...]:
        cpu = _req(_num(r, "cpu_milli", where, lo=1)) / 1000.0
        mem = _req(_num(r, "memory_mib", where)) / _MIB_PER_GB
        gpus = _req(_num(r, "num_gpu", where, integer=True))
        milli = _req(_num(r, "gpu_milli", where, integer=True))
        if milli > 1000:
            raise InvalidInput("gpu_milli", r["gpu_milli"], "0..1000", where)
        created = _req(_num(r, "creation_time", where))
        deleted = _req(_num(r, "deletion_time", where))
        sched = _num(r, "scheduled_time", where, optional=True)
        if deleted < created:
            raise InvalidInput(
                "deletion_time", r["deletion_time"], f">= creation_time {created:g}", where
            )
        if sched is not None and not created <= sched <= deleted:
            raise InvalidInput(
                "scheduled_time",
                r["scheduled_time"],
                "between creation_time and deletion_time",
                where,
            )
        return cpu, mem, gpus, milli, created, deleted, -1.0 if sched is None else sched

    prow = _Rows(pf, skip)
    pods = list(prow.read(_POD_COLS, True, parse_pod))
    censor = max((p[5] for _, p in pods), default=0.0)
    out = []
    for line, (cpu, mem, gpus, milli, created, deleted, sched) in pods:
        w = max(1, int(gpus))
        share = 0.0 if gpus == 0 else (milli / 1000.0 if gpus == 1 else 1.0)
        run = deleted - sched if sched >= 0 and deleted < censor else None
        out.append(TraceRow(created, int(gpus), run, line, cpu / w, mem / w, share))
    fields = ("arrival", "workers", "runtime", "worker_gpu", "worker_cpu", "worker_mem", "cluster")
    trace = _trace("alibaba", pf, out, prow.skipped + node_skipped, fields, (pf, nf))
    return replace(trace, nodes=node_list)


_PAI_COLS = ("", "worker", "gpu", "time", "batch_time_norm")
_PAI_HEADER = ",".join(_PAI_COLS)


def _pai_files(path: Path) -> list[Path]:
    """``path`` if a file, else every ``*.csv`` of the folder whose header is PAI's
    per-worker mini-batch header (any name: the header, not the name, says what it is)."""
    if path.is_file():
        return [path]
    csvs = sorted(f for f in path.glob("*.csv") if f.is_file())
    files = [f for f in csvs if _header(f) == _PAI_HEADER]
    if not files:
        seen = f" (found: {_names(csvs)})" if csvs else ""
        raise InvalidInput(
            "trace", str(path), f"CSV files with the PAI header '{_PAI_HEADER}'{seen}"
        )
    return files


def _load_pai(path: Path, skip: bool, nodes: Path | None) -> Trace:
    folder = path.parent if path.is_file() else path
    files = _pai_files(path)

    def parse(r: dict[str, str], where: str) -> tuple[int, int, float]:
        _num(r, "", where, integer=True)
        worker = int(_req(_num(r, "worker", where, integer=True)))
        it = int(_req(_num(r, "time", where, integer=True)))
        bt = _req(_num(r, "batch_time_norm", where))
        if bt <= 0 or bt > 1000:
            raise InvalidInput("batch_time_norm", r["batch_time_norm"], "in (0, 1000]", where)
        return worker, it, bt

    factors: list[float] = []
    skipped = 0
    for f in files:
        rows = _Rows(f, skip)
        per_iter: dict[int, dict[int, float]] = {}
        workers: set[int] = set()
        for _, (w, it, bt) in rows.read(_PAI_COLS, True, parse):
            per_iter.setdefault(it, {})[w] = bt
            workers.add(w)
        skipped += rows.skipped
        for it in sorted(per_iter):
            times = per_iter[it]
            if len(times) == len(workers) and len(workers) > 1:  # complete iterations only
                v = np.fromiter(times.values(), float)
                factors.append(float(v.max() / v.mean()))
    return Trace(
        "pai", folder, (), skipped, ("straggler",), stragglers=tuple(factors), files=tuple(files)
    )


def _trace(
    kind: str,
    path: Path,
    rows: list[TraceRow],
    skipped: int,
    fields: tuple[str, ...],
    files: tuple[Path, ...],
) -> Trace:
    rows.sort(key=lambda r: (r.arrival_s, r.line))
    return Trace(kind, path, tuple(rows), skipped, fields, files=files)


_LOADERS = {
    "philly": _load_philly,
    "google": _load_google,
    "alibaba": _load_alibaba,
    "pai": _load_pai,
}


def load_trace(
    kind: str,
    path: Path | str | None = None,
    *,
    skip_bad_rows: bool = False,
    nodes: Path | str | None = None,
) -> Trace:
    """Load a trace folder (default :func:`default_trace_dir`) or one of its files.

    ``nodes`` (Alibaba only): the node list's file or folder when it is not
    beside the pod list.  Raises :class:`InvalidInput` naming the path if it
    is missing, and naming ``file:line`` and the field for a malformed row
    (unless ``skip_bad_rows``).
    """
    if kind not in _LOADERS:
        raise InvalidInput("trace kind", kind, " | ".join(_LOADERS))
    if nodes is not None and kind != "alibaba":
        raise InvalidInput("nodes", str(nodes), "a node list for the alibaba trace only")
    if path is None:
        d = default_trace_dir(kind)
        if d is None:
            raise missing_trace(kind, "trace")
        path = d
    p = Path(path).expanduser().resolve()
    if not p.exists():
        raise InvalidInput("trace", str(p), "an existing trace folder or file")
    n = None if nodes is None else Path(nodes).expanduser().resolve()
    trace = _cached(kind, p, bool(skip_bad_rows), n, _stamp(p, n))
    if kind in ARRIVAL_KINDS and not trace.rows:
        raise InvalidInput("trace", str(trace.path), "at least one valid job row")
    return trace


def _stamp(*paths: Path | None) -> tuple[tuple[str, int], ...]:
    """Names and mtimes of the CSV files a load may read (keys the cache)."""
    out = []
    for p in paths:
        if p is None:
            continue
        folder = p.parent if p.is_file() else p
        for f in sorted(folder.glob("*.csv")):
            with contextlib.suppress(OSError):
                out.append((str(f), f.stat().st_mtime_ns))
    return tuple(out)


@lru_cache(maxsize=16)
def _cached(
    kind: str, path: Path, skip: bool, nodes: Path | None, stamp: tuple[tuple[str, int], ...]
) -> Trace:
    # ``stamp`` (file names and mtimes) keys the cache so an edited file is re-read.
    return _LOADERS[kind](path, skip, nodes)


# ---------------------------------------------------------------- arrivals


def _check_size(n_jobs: int, slots: int) -> None:
    if int(n_jobs) != n_jobs or n_jobs < 1:
        raise InvalidInput("jobs", n_jobs, "an integer >= 1")
    if int(slots) != slots or slots < 1:
        raise InvalidInput("slots", slots, "an integer >= 1")


def sample_rows(n_rows: int, n_jobs: int, rng: np.random.Generator) -> np.ndarray:
    """Sorted row indices: every row ``n_jobs // n_rows`` times, the rest without replacement."""
    reps, rest = divmod(int(n_jobs), int(n_rows))
    idx = np.concatenate(
        [np.tile(np.arange(n_rows), reps), rng.choice(n_rows, size=rest, replace=False)]
    )
    return np.sort(idx)


def _to_slots(seconds: np.ndarray, lo: float, hi: float, slots: int) -> np.ndarray:
    span = hi - lo
    if span <= 0:
        return np.zeros(len(seconds), dtype=np.int64)
    s = np.floor((seconds - lo) / span * slots).astype(np.int64)
    return np.clip(s, 0, slots - 1)


def scale_arrivals(
    arrival_seconds: np.ndarray, n_jobs: int, slots: int, rng: np.random.Generator
) -> np.ndarray:
    """``n_jobs`` sorted arrival slots in [0, ``slots``) sampled from a trace's arrivals.

    Linear map of the trace's whole span onto the horizon (module docstring).
    """
    _check_size(n_jobs, slots)
    a = np.sort(np.asarray(arrival_seconds, dtype=float))
    if a.size == 0:
        raise InvalidInput("arrival_seconds", 0, "at least one arrival")
    if not np.all(np.isfinite(a)):
        raise InvalidInput("arrival_seconds", "non-finite value", "finite seconds")
    idx = sample_rows(a.size, n_jobs, rng)
    return _to_slots(a[idx], a[0], a[-1], slots)


def arrival_rows(trace: Trace) -> tuple[TraceRow, ...]:
    """The rows whose arrivals are mapped (drops the warm-up, :data:`WARMUP_SECONDS`)."""
    cut = WARMUP_SECONDS.get(trace.kind)
    rows = trace.rows if cut is None else tuple(r for r in trace.rows if r.arrival_s >= cut)
    if not rows:
        raise InvalidInput("trace", str(trace.path), "job rows after the warm-up")
    return rows


def trace_arrivals(
    kind: str,
    n_jobs: int,
    slots: int,
    rng: np.random.Generator,
    path: Path | str | None = None,
    *,
    skip_bad_rows: bool = False,
) -> np.ndarray:
    """Sorted int arrival slots in [0, ``slots``) scaled from the real trace ``kind``."""
    return arrivals_with_notes(kind, n_jobs, slots, rng, path, skip_bad_rows=skip_bad_rows)[0]


def arrivals_with_notes(
    kind: str,
    n_jobs: int,
    slots: int,
    rng: np.random.Generator,
    path: Path | str | None = None,
    *,
    skip_bad_rows: bool = False,
) -> tuple[np.ndarray, tuple[str, ...]]:
    """:func:`trace_arrivals` and the notes saying which trace, rows and skips."""
    if kind not in ARRIVAL_KINDS:
        raise InvalidInput("trace kind", kind, " | ".join(ARRIVAL_KINDS))
    trace = load_trace(kind, path, skip_bad_rows=skip_bad_rows)
    rows = arrival_rows(trace)
    arrivals = scale_arrivals(np.array([r.arrival_s for r in rows]), n_jobs, slots, rng)
    notes = (f"arrivals: {trace.describe()}, scaled onto {slots} slots", *trace.notes)
    return arrivals, notes


# ---------------------------------------------------------------- cluster jobs

_NODE_STORAGE_GB = 180.0  # 18 × the paper's 10 GB per-worker storage maximum


def _cluster_from(trace: Trace, machines: int | None, rng: np.random.Generator) -> Cluster:
    if not trace.nodes:
        return Cluster.uniform(30 if machines is None else machines, machine_capacity("sync"))
    nodes = np.asarray(trace.nodes, dtype=float)
    if machines is not None:
        if int(machines) != machines or machines < 1:
            raise InvalidInput("machines", machines, "an integer >= 1")
        nodes = nodes[sample_rows(len(nodes), int(machines), rng)]
    storage = np.full((len(nodes), 1), _NODE_STORAGE_GB)
    return Cluster(np.hstack([nodes, storage]))


def _split_work(work: float, epochs: int) -> tuple[int, int]:
    """(E, K) with E·K ≈ ``work``: keep the drawn E unless the work is smaller."""
    samples = round(work / epochs)
    if samples >= 1:
        return epochs, samples
    return max(1, round(work)), 1


def _jobs_one_by_one(
    sampled: list[TraceRow],
    arrivals: np.ndarray,
    rng: np.random.Generator,
    cap: np.ndarray,
    cap_max: np.ndarray,
    known: np.ndarray,
    mix: Sequence[float],
    stragglers: Trace | None,
) -> tuple[list[ClusterJob], int, int, int, int]:
    """Each job drawn by ``random_job``, then the trace's fields put in (module docstring);
    with the counts (workers from the trace, run times, resampled, set to 1)."""
    n_workers = n_runtime = n_resampled = n_one = 0
    jobs = []
    for k, row in enumerate(sampled):
        job = random_job(k, int(arrivals[k]), rng, mix=mix, mode="sync")
        if row.workers is not None:
            w = max(1, row.workers)
            n_workers += 1
        elif known.size:
            w = max(1, int(rng.choice(known)))
            n_resampled += 1
        else:  # no count anywhere in the trace: keep the run time with one worker
            w = 1
            n_one += 1
        # the fields replaced, each checked by ClusterJob itself
        change: dict[str, Any] = {"batch": max(job.batch, w)}  # Eq. (4) must allow W
        if row.gpu_share is not None:
            change["worker_demand"] = (row.gpu_share, row.cpu, row.mem_gb, job.worker_demand[3])
            # a drawn PS larger than every sampled node would make the job unplaceable
            change["ps_demand"] = tuple(np.minimum(job.ps_demand, cap_max).tolist())
        if stragglers is not None:
            change["straggler"] = max(1.0, float(rng.choice(stragglers.stragglers)))
        job = replace(job, **change)
        if row.runtime_s is not None:
            s = job.min_ps(w)
            bundle = w * np.asarray(job.worker_demand) + s * np.asarray(job.ps_demand)
            internal = bool(np.any(np.all(cap >= bundle, axis=1)))  # Fact 1
            work = row.runtime_s / SLOT_SECONDS * sync_rate(job, w, s, internal)
            e, kk = _split_work(work, job.epochs)
            job = replace(job, epochs=e, samples=kk)
            n_runtime += 1
        jobs.append(job)
    return jobs, n_workers, n_runtime, n_resampled, n_one


def _jobs_from_draws(
    sampled: list[TraceRow],
    arrivals: np.ndarray,
    d: SyncDraws,
    cap: np.ndarray,
    cap_max: np.ndarray,
    mix: Sequence[float],
) -> list[ClusterJob]:
    """:func:`_jobs_one_by_one` over arrays when every row has a worker count and no
    straggler is drawn: the same operations on the same floats, so the same jobs."""
    w = np.array([max(1, r.workers or 0) for r in sampled], dtype=np.int64)
    batch = np.maximum(d.batch, w)  # Eq. (4) must allow W
    worker, ps = d.worker, d.ps
    share = np.array([r.gpu_share is not None for r in sampled])
    if share.any():  # per-worker requests from the trace (Alibaba); storage stays drawn
        worker = worker.copy()
        rows = np.flatnonzero(share)
        worker[rows, :3] = [(sampled[i].gpu_share, sampled[i].cpu, sampled[i].mem_gb) for i in rows]
        ps = ps.copy()
        ps[rows] = np.minimum(ps[rows], cap_max)
    epochs, samples = d.epochs.copy(), d.samples.copy()
    runtime = np.array([np.nan if r.runtime_s is None else r.runtime_s for r in sampled])
    timed = np.flatnonzero(~np.isnan(runtime))
    if timed.size:
        wt, gamma, F = w[timed], d.gamma[timed], batch[timed]
        s = np.maximum(1, np.ceil(wt / gamma - 1e-9)).astype(np.int64)  # ClusterJob.min_ps
        bundle = wt[:, None] * worker[timed] + s[:, None] * ps[timed]
        internal = np.zeros(timed.size, dtype=bool)
        for c in cap:  # Fact 1: the bundle fits one machine
            internal |= np.all(c >= bundle, axis=1)
        b_ext = d.b_ext[timed]
        gbps = np.where(internal, INT_EXT_RATIO * b_ext, b_ext)
        straggler = np.ones(timed.size)
        rate = wt * sync_worker_rates(gamma, F, d.grad_mb[timed], d.tau[timed], straggler, gbps)
        short = s * gamma < wt  # sync_rate's other branch: fewer PSs than W/γ
        if short.any():
            comm = comm_slots(2.0 * d.grad_mb[timed][short] / s[short], gbps[short])
            per_sample = d.tau[timed][short] * straggler[short] + comm * wt[short] / F[short]
            rate[short] = wt[short] / per_sample
        work = runtime[timed] / SLOT_SECONDS * rate
        k = np.rint(work / epochs[timed])  # _split_work
        small = k < 1
        epochs[timed] = np.where(small, np.maximum(1, np.rint(work)), epochs[timed])
        samples[timed] = np.where(small, 1, k)
    b_ext_all = d.b_ext
    b_int_all = INT_EXT_RATIO * b_ext_all
    utility = [
        Sigmoid(*t)
        for t in zip(d.theta1.tolist(), d.theta2.tolist(), d.theta3.tolist(), strict=True)
    ]
    return [
        ClusterJob(
            id=k,
            arrival=a,
            worker_demand=tuple(wd),
            ps_demand=tuple(pd),
            b_ext=be,
            b_int=bi,
            utility=u,
            mode="sync",
            epochs=e,
            samples=kk,
            batch=f,
            grad_mb=gm,
            tau=ta,
            gamma=ga,
        )
        for k, (a, wd, pd, be, bi, u, e, kk, f, gm, ta, ga) in enumerate(
            zip(
                arrivals.tolist(),
                worker.tolist(),
                ps.tolist(),
                b_ext_all.tolist(),
                b_int_all.tolist(),
                utility,
                epochs.tolist(),
                samples.tolist(),
                batch.tolist(),
                d.grad_mb.tolist(),
                d.tau.tolist(),
                d.gamma.tolist(),
                strict=True,
            )
        )
    ]


def trace_cluster(
    trace: Trace,
    n_jobs: int,
    machines: int | None,
    slots: int,
    rng: np.random.Generator,
    *,
    mix: Sequence[float] = DEFAULT_MIX,
    stragglers: Trace | None = None,
) -> ClusterWorkload:
    """``n_jobs`` sync jobs sampled from ``trace`` over ``slots`` slots (module docstring).

    ``machines`` = identical machines (Philly, Google; ``None`` → 30) or nodes
    sampled from the node list (Alibaba; ``None`` → all nodes).
    """
    _check_size(n_jobs, slots)
    if trace.kind not in ARRIVAL_KINDS:
        raise InvalidInput("trace kind", trace.kind, " | ".join(ARRIVAL_KINDS))
    if stragglers is not None and not stragglers.stragglers:
        raise InvalidInput("straggler trace", str(stragglers.path), "a PAI mini-batch trace")
    cluster = _cluster_from(trace, machines, rng)
    # the distinct machine rows: "fits some machine" never needs all of them
    cap = np.unique(cluster.capacity, axis=0)
    rows = arrival_rows(trace)
    lo, hi = rows[0].arrival_s, rows[-1].arrival_s
    fits: Sequence[TraceRow] = rows
    if trace.nodes:  # per-worker requests must fit a node of this cluster
        fitting = []
        for r in rows:
            need = (r.gpu_share or 0.0, r.cpu or 0.0, r.mem_gb or 0.0, 0.0)
            if np.any(np.all(cap >= need, axis=1)):
                fitting.append(r)
        if not fitting:
            raise InvalidInput("machines", machines, "nodes that fit at least one trace pod")
        fits = fitting
    idx = sample_rows(len(fits), n_jobs, rng)
    arrivals = _to_slots(np.array([fits[i].arrival_s for i in idx]), lo, hi, slots)
    known = np.array([r.workers for r in rows if r.workers is not None], dtype=np.int64)
    cap_max = cap.max(axis=0)
    n_resampled = n_one = 0
    sampled = [fits[i] for i in idx]
    # random_job's draws for every job in one go, when nothing else is drawn between them
    draws = None
    if stragglers is None and all(r.workers is not None for r in sampled):
        draws = sync_job_draws(len(sampled), rng, mix)
    if draws is not None:
        jobs = _jobs_from_draws(sampled, arrivals, draws, cap, cap_max, mix)
        n_workers = len(jobs)
        n_runtime = sum(r.runtime_s is not None for r in sampled)
    else:
        jobs, n_workers, n_runtime, n_resampled, n_one = _jobs_one_by_one(
            sampled, arrivals, rng, cap, cap_max, known, mix, stragglers
        )
    n = len(jobs)
    workers_note = f"workers ({n_workers}/{n}"
    if n_resampled:
        workers_note += f"; {n_resampled} resampled from the trace's {known.size} counts"
    if n_one:
        workers_note += f"; {n_one} set to 1"
    notes = [
        trace.describe(),
        f"from the trace: arrival ({n}/{n} jobs, scaled onto {slots} slots), "
        f"{workers_note}), run time -> E*K ({n_runtime}/{n}; others drawn)",
        "drawn from PD-ORS ranges: epochs, batch (>= workers), grad_mb, tau, gamma, "
        + ("PS demand, worker storage" if trace.nodes else "worker and PS demand")
        + ", bandwidth, utility",
    ]
    if trace.kind in WARMUP_SECONDS:
        notes.append(f"{len(trace.rows) - len(rows)} warm-up rows before the dense period dropped")
    if trace.nodes:
        notes.append(
            f"cluster: {cluster.machines} nodes from the node list {trace.files[-1]} "
            f"({len(rows) - len(fits)} pods fit no node and were not sampled)"
        )
    if stragglers is not None:
        notes.append(
            f"straggler: PAI max/mean worker time ({len(stragglers.stragglers)} iterations, "
            f"{stragglers.skipped} bad rows skipped)"
        )
    notes.extend(trace.notes)
    if n_one:
        notes.append(
            f"{WARNING}the {trace.kind} trace gives no job a worker count, so {n_one} of {n}"
            " jobs run with W = 1 worker (their trace run times are kept)"
        )
    return ClusterWorkload(
        jobs=tuple(jobs),
        cluster=cluster,
        horizon=slots,
        source=f"trace-{trace.kind}",
        notes=tuple(notes),
    )


def _builder(kind: str) -> Callable[[WorkloadParams, np.random.Generator], ClusterWorkload]:
    def build(p: WorkloadParams, rng: np.random.Generator) -> ClusterWorkload:
        extra = p.extra
        if extra.get("mode", "sync") != "sync":
            raise InvalidInput("mode", extra["mode"], f"sync (the {kind} workload is BSP)")
        skip = bool(extra.get("skip_bad_rows", False))
        nodes = extra.get("nodes")
        trace = load_trace(kind, p.trace, skip_bad_rows=skip, nodes=nodes)
        strag = None
        if extra.get("straggler", False):
            strag = load_trace("pai", extra.get("straggler_trace"), skip_bad_rows=skip)
        machines = p.machines if kind == "alibaba" else (p.machines or 30)
        return trace_cluster(
            trace,
            p.jobs or 100,
            machines,
            p.slots or 80,
            rng,
            mix=extra.get("mix", DEFAULT_MIX),
            stragglers=strag,
        )

    build.__name__ = f"_cluster_{kind}"
    return build


for _kind in ARRIVAL_KINDS:
    register_workload("cluster", _kind)(_builder(_kind))
