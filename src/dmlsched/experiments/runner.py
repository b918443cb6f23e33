"""Run an experiment's (scheduler, point, seed) cells: in-process, on a local
process pool, or on a Ray cluster; resumable.

Every finished cell is appended to ``results.csv`` at once (and its curves, if
its cell function gives any, to ``curves.csv`` just before:
:mod:`dmlsched.experiments.curves`); rerunning the same command computes only
the cells not yet in the file, then sorts it, so an interrupted run resumed
gives the same file as an uninterrupted one.

``config.json`` beside the results records what was run and the notes of the
first cell's workload (where its data came from, and any fallback it took);
a rerun with a different configuration into the same folder is refused
(InvalidInput).

``config.json`` beside the results records what was run and the notes of the
first cell's workload (where its data came from, and any fallback it took);
a rerun with a different configuration into the same folder is refused
(InvalidInput).

Provenance: ``provenance.csv`` beside the results records each cell's
fingerprint (:mod:`dmlsched.experiments.provenance`: the code and inputs that
computed it, with the schedulers the cell made).  A resume recomputes every
cell whose fingerprint no longer matches — or that has none — instead of
mixing cells of different code in one file.

Seeds: ``RunConfig.seeds`` seeds from ``RunConfig.seed_base`` (0: seeds 0..n−1;
100: the held-out seeds 100..100+n−1); the seed is each cell's only randomness.

Safety:

* one run per folder: :func:`dmlsched.experiments.lock.hold` (a second run
  refuses naming the holder, or waits with ``RunConfig.wait``);
* Ctrl-C raises :class:`~dmlsched.errors.Interrupted` saying how many cells
  were kept; queued cells are cancelled and the workers killed
  (:mod:`dmlsched.experiments.pool`), and the workers also die with a killed
  parent;
* a torn or cut last cell (a kill during a write) is dropped and recomputed;
  a corrupted ``results.csv`` or ``config.json`` is InvalidInput naming the
  file and line (:mod:`dmlsched.results`).

An experiment whose cells are another's (``Experiment.same_runs_as``) takes
the cells that experiment already computed in this command (``reuse``): the
metrics are copied, the rows relabelled with its own ID, so its results.csv
is byte for byte what computing them again would write.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
from collections.abc import Callable, Generator, Iterator
from concurrent.futures import FIRST_COMPLETED, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dmlsched.errors import Interrupted, InvalidInput
from dmlsched.experiments.catalogue import Experiment, Point
from dmlsched.experiments.curves import CellResult, append_curves, prune_curves, sort_curves
from dmlsched.experiments.lock import hold
from dmlsched.experiments.pool import kill_workers, sigint_blocked, worker_pool
from dmlsched.memo import shared_folder
from dmlsched.results import (
    PROVENANCE,
    CellKey,
    Provenance,
    append_provenance,
    append_rows,
    cell_rows,
    done_cells,
    drop_cells,
    read_provenance,
    repair,
    scan_results,
    sort_results,
    write_provenance,
)
from dmlsched.schedulers.plugins import Plugin, load_plugins

__all__ = ["RunConfig", "run_experiment"]


@dataclass(frozen=True)
class RunConfig:
    seeds: int
    quick: bool = False
    workers: int | None = None  # None: all cores
    ray: str | None = None  # "local" or a cluster address
    extra: dict[str, Any] | None = None  # recorded in config.json (e.g. compare's flags)
    wait: bool = False  # another run holds the folder: wait for it instead of refusing
    traces: Path | None = None  # trace root replacing ../shared/traces for every cell
    seed_base: int = 0  # the first seed: seeds seed_base .. seed_base + seeds − 1
    plugins: tuple[Plugin, ...] = ()  # loaded in every worker before its cells
    looks: tuple[int, ...] = ()  # seeds judged before going on (experiments.looks); () = all

    @property
    def seed_list(self) -> range:
        return range(self.seed_base, self.seed_base + self.seeds)


@dataclass(frozen=True)
class _Done:
    """A finished cell: its metrics (and curves) and the modules of the schedulers it made."""

    key: CellKey
    result: CellResult
    made: tuple[str, ...]


def _cell(
    exp: Experiment, key: CellKey, point: Point, quick: bool, traces: Path | None = None
) -> _Done:
    from dmlsched.experiments.provenance import recording
    from dmlsched.workloads.traces import trace_root

    with trace_root(traces), recording() as made:
        result = exp.run_cell_curves(key.scheduler, point, key.seed, quick)
    return _Done(key, result, tuple(sorted(made)))


def _plugin_cell(plugins: tuple[Plugin, ...], cell: bytes) -> _Done:
    """:func:`_cell` in a worker that first loads ``plugins``: the cell's arguments are
    unpickled after, as they may name the plugins' functions and classes."""
    load_plugins(plugins)
    return _cell(*pickle.loads(cell))


def _cell_task(
    cfg: RunConfig, exp: Experiment, key: CellKey, point: Point
) -> tuple[Callable[..., _Done], tuple[Any, ...]]:
    """(function, arguments) of one cell in a worker process (with the plugins, if any)."""
    args = (exp, key, point, cfg.quick, cfg.traces)
    if cfg.plugins:
        return _plugin_cell, (cfg.plugins, pickle.dumps(args))
    return _cell, args


def workload_notes(exp: Experiment, quick: bool, traces: Path | None = None) -> list[str]:
    """Notes of the first point's workload at seed 0 (what came from where, fallbacks),
    its paths relative to the checkout (:func:`dmlsched.portable.portable_paths`).

    Built once before the sweep, so a workload that cannot be built (a missing
    or malformed trace) fails the run before any cell starts.
    """
    from dmlsched.portable import portable_paths
    from dmlsched.workloads.traces import trace_root

    with trace_root(traces):
        wl = exp.build(exp.sweep(quick)[0], 0, quick)
    # recorded in config.json and summary.md: no path of this machine (dmlsched.portable)
    return [portable_paths(str(n)) for n in getattr(wl, "notes", ())]


def _config_blob(exp: Experiment, cfg: RunConfig, notes: list[str]) -> dict[str, Any]:
    blob = {
        "experiment": exp.id,
        "setting": exp.setting,
        "param": exp.param,
        "points": [str(p) for p in exp.sweep(cfg.quick)],
        "schedulers": list(exp.schedulers),
        "seeds": cfg.seeds,
        "quick": cfg.quick,
        "extra": cfg.extra or {},
        "notes": notes,
    }
    if cfg.traces is not None:
        blob["traces"] = str(cfg.traces)
    if cfg.seed_base:  # absent for seeds from 0, as in folders written before it existed
        blob["seed_base"] = cfg.seed_base
    if cfg.plugins:
        blob["plugins"] = [p.where for p in cfg.plugins]
    if cfg.looks:  # absent for a fixed-seeds run, as in folders written before looks
        blob["looks"] = list(cfg.looks)
    return blob


def read_config(path: Path) -> dict[str, Any]:
    """``config.json`` as written by :func:`run_experiment`; corrupt → InvalidInput with line."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise InvalidInput("config.json", "undecodable bytes", "UTF-8 JSON", str(path)) from e
    try:
        blob = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidInput(
            "config.json",
            e.msg,
            "the JSON dmlsched wrote (delete the folder to start over)",
            f"{path}:{e.lineno}:{e.colno}",
        ) from None
    if not isinstance(blob, dict):
        raise InvalidInput("config.json", type(blob).__name__, "a JSON object", f"{path}:1")
    return blob


def _legacy(old: dict[str, Any], blob: dict[str, Any]) -> dict[str, Any]:
    """``blob`` as a config.json written before notes were recorded would hold it.

    Such a folder (no top-level ``notes``; compare kept them in ``extra``) still
    resumes: everything but the notes must match.  So does one whose notes
    held absolute paths, now recorded relative to the checkout.
    """
    if "notes" in old:
        from dmlsched.portable import portable_paths

        was = old["notes"]
        if isinstance(was, list) and [portable_paths(str(n)) for n in was] == blob["notes"]:
            return {**blob, "notes": was}
        return blob
    extra = {k: v for k, v in (blob.get("extra") or {}).items() if k != "notes"}
    old_extra = old.get("extra") or {}
    if "notes" in old_extra:
        extra["notes"] = old_extra["notes"]
    return {**{k: v for k, v in blob.items() if k != "notes"}, "extra": extra}


def _check_config(out: Path, blob: dict[str, Any]) -> None:
    path = out / "config.json"
    if path.exists():
        old = read_config(path)
        blob = _legacy(old, blob)
        if old != blob:
            diff = sorted(k for k in blob.keys() | old.keys() if old.get(k) != blob.get(k))
            raise InvalidInput(
                "out", str(out), f"a fresh folder or the same configuration (differs in {diff})"
            )
    else:
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(blob, indent=2, sort_keys=True, allow_nan=False) + "\n")
        os.replace(tmp, path)  # atomic: a kill never leaves half a config


def _pending(
    exp: Experiment, cfg: RunConfig, done: set[CellKey], seeds: int
) -> list[tuple[CellKey, Point]]:
    cells = []
    for point in exp.sweep(cfg.quick):
        for sched in exp.schedulers:
            for seed in cfg.seed_list[:seeds]:
                key = CellKey(sched, str(point), seed)
                if key not in done:
                    cells.append((key, point))
    return cells


def _copied(
    reuse: Path, cells: list[tuple[CellKey, Point]]
) -> tuple[list[_Done], list[tuple[CellKey, Point]]]:
    """(cells found in ``reuse`` with their metrics, the cells still to compute)."""
    have: dict[CellKey, dict[str, float]] = {}
    for r in scan_results(reuse).rows:
        have.setdefault(CellKey(r[2], r[4], r[5]), {})[r[6]] = r[7]
    prov = read_provenance(reuse.parent / PROVENANCE)
    found = [
        _Done(k, CellResult(have[k]), prov[k].made if k in prov else ())
        for k, _ in cells
        if k in have
    ]
    return found, [c for c in cells if c[0] not in have]


def _stale(
    exp: Experiment, out: Path, cfg: RunConfig, done: set[CellKey]
) -> tuple[set[CellKey], dict[CellKey, Provenance]]:
    """(finished cells whose recorded fingerprint is missing or no longer matches, the
    provenance of the others)."""
    from dmlsched.experiments.provenance import cell_fingerprint

    points = {str(p): p for p in exp.sweep(cfg.quick)}
    recorded = read_provenance(out / PROVENANCE)
    stale: set[CellKey] = set()
    fresh: dict[CellKey, Provenance] = {}
    for key in done:
        prov = recorded.get(key)
        point = points.get(key.value)
        if prov is None or point is None:
            stale.add(key)
            continue
        now = cell_fingerprint(
            exp, key.scheduler, point, key.seed, cfg.quick, cfg.traces, prov.made
        )
        if now == prov.fingerprint:
            fresh[key] = prov
        else:
            stale.add(key)
    return stale, fresh


def _then(first: list[_Done], rest: Iterator[_Done]) -> Generator[_Done, None, None]:
    yield from first
    yield from rest  # closing this closes ``rest`` (its pool) too


def _local(exp: Experiment, cells: list[tuple[CellKey, Point]], cfg: RunConfig) -> Iterator[_Done]:
    workers = cfg.workers or os.cpu_count() or 1
    if workers <= 1 or len(cells) <= 1:
        for key, point in cells:
            yield _cell(exp, key, point, cfg.quick, cfg.traces)
        return
    # reference runs memoised with dmlsched.memo.shared: computed once for all workers
    with shared_folder():
        pool = None
        futures: set[Any] = set()
        failed = False
        try:
            with sigint_blocked():  # the pool starts its workers here (see experiments.pool)
                pool = worker_pool(min(workers, len(cells)))
                futures = {
                    pool.submit(fn, *args) for fn, args in (_cell_task(cfg, exp, *c) for c in cells)
                }
            while futures:
                finished, futures = wait(futures, return_when=FIRST_COMPLETED)
                for fut in finished:
                    yield fut.result()
        except BaseException:  # Ctrl-C, a failed cell, or the consumer closing us
            failed = True
            if pool is not None:
                # unfinished cells are lost anyway: do not wait for them.  The pool then
                # fails every pending future itself (cancelling them first races with
                # that in Python 3.11: InvalidStateError in its manager thread).
                kill_workers(pool)
            raise
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=not failed)


def _ray(exp: Experiment, cells: list[tuple[CellKey, Point]], cfg: RunConfig) -> Iterator[_Done]:
    import ray

    if not ray.is_initialized():
        if cfg.ray == "local":
            ray.init(
                num_cpus=cfg.workers or os.cpu_count(),
                include_dashboard=False,
                log_to_driver=False,
                configure_logging=False,
            )
        else:
            ray.init(address=cfg.ray, log_to_driver=False)
    remote = {fn: ray.remote(fn) for fn in (_cell, _plugin_cell)}
    refs = [remote[fn].remote(*args) for fn, args in (_cell_task(cfg, exp, *c) for c in cells)]
    try:
        while refs:
            ready, refs = ray.wait(refs, num_returns=1)
            for r in ready:
                yield ray.get(r)
    except BaseException:
        for r in refs:
            with contextlib.suppress(Exception):
                ray.cancel(r, force=True)
        raise


def run_experiment(
    exp: Experiment,
    out: Path,
    cfg: RunConfig,
    on_progress: Callable[[int, int], None] | None = None,
    on_warning: Callable[[str], None] | None = None,
    notes: list[str] | None = None,
    reuse: Path | None = None,
    upto: int | None = None,
) -> Path:
    """Run the missing cells of ``exp`` into ``out/results.csv``; returns its path.

    ``upto``: only the first ``upto`` seeds of ``cfg``'s (a look of a sequential run,
    :mod:`dmlsched.experiments.looks`; the configuration recorded is ``cfg``'s all the same).

    ``reuse``: the results.csv of ``exp.same_runs_as`` from this command, whose
    cells are copied rather than computed (module docstring).

    ``on_warning`` gets each workload note that reports a fallback
    (``"WARNING: ..."``, see :func:`dmlsched.workloads.registry.warning_notes`).
    ``notes``: :func:`workload_notes` if the caller has them already.
    """
    from dmlsched.experiments.provenance import cell_fingerprint
    from dmlsched.workloads.registry import warning_notes

    if int(cfg.seeds) != cfg.seeds or cfg.seeds < 1:
        raise InvalidInput("seeds", cfg.seeds, "an integer >= 1")
    if int(cfg.seed_base) != cfg.seed_base or cfg.seed_base < 0:
        raise InvalidInput("seed-base", cfg.seed_base, "an integer >= 0")
    if cfg.workers is not None and cfg.workers < 1:
        raise InvalidInput("workers", cfg.workers, ">= 1")
    seeds = cfg.seeds if upto is None else upto
    if not 1 <= seeds <= cfg.seeds:
        raise InvalidInput("upto", upto, f"an integer in [1, {cfg.seeds}]")
    if notes is None:
        notes = workload_notes(exp, cfg.quick, cfg.traces)
    if on_warning:
        for w in warning_notes(notes):
            on_warning(w)
    with hold(out, wait=cfg.wait, on_wait=on_warning and _waiting(on_warning)):
        _check_config(out, _config_blob(exp, cfg, notes))
        results = out / "results.csv"
        curves = out / "curves.csv"
        repair(results)
        stale, fresh = _stale(exp, out, cfg, done_cells(results))
        if stale:
            drop_cells(results, stale)
            if on_warning:
                on_warning(
                    f"{out}: {len(stale)} cell(s) were computed by other code or inputs "
                    "(or record none): computing them again"
                )
        write_provenance(out / PROVENANCE, fresh)
        done_now = done_cells(results)
        prune_curves(curves, {(k.scheduler, k.value, k.seed) for k in done_now})
        cells = _pending(exp, cfg, done_now, seeds)
        total = len(exp.sweep(cfg.quick)) * len(exp.schedulers) * seeds
        done = total - len(cells)
        if on_progress:
            on_progress(done, total)
        copied: list[_Done] = []
        if reuse is not None and cells:
            copied, cells = _copied(reuse, cells)
        points = {key: point for key, point in cells}
        points.update({c.key: _point_of(exp, cfg, c.key) for c in copied})
        stream = _then(copied, _ray(exp, cells, cfg) if cfg.ray else _local(exp, cells, cfg))
        try:
            with contextlib.closing(stream):  # a Ctrl-C between cells still stops the pool
                for cell in stream:
                    key, result = cell.key, cell.result
                    if result.curves:  # first: a cell in results.csv always has its curves
                        append_curves(curves, exp.id, exp.setting, key, exp.param, result.curves)
                    rows = cell_rows(exp.id, exp.setting, key, exp.param, result.metrics)
                    append_rows(results, rows)
                    fp = cell_fingerprint(
                        exp, key.scheduler, points[key], key.seed, cfg.quick, cfg.traces, cell.made
                    )
                    fresh[key] = Provenance(fp, cell.made)
                    append_provenance(out / PROVENANCE, key, fresh[key])
                    done += 1
                    if on_progress:
                        on_progress(done, total)
        except KeyboardInterrupt:
            kept = len(done_cells(results))  # the file, not a counter a signal may have raced
            raise Interrupted(
                f"interrupted: {kept} of {total} cells kept in {results}; "
                f"rerun the same command to compute the other {total - kept}"
            ) from None
        order = [str(p) for p in exp.sweep(cfg.quick)], list(exp.schedulers)
        sort_results(results, *order)
        sort_curves(curves, *order)
        have = done_cells(results)
        write_provenance(out / PROVENANCE, {k: v for k, v in fresh.items() if k in have})
    return results


def _point_of(exp: Experiment, cfg: RunConfig, key: CellKey) -> Point:
    return next(p for p in exp.sweep(cfg.quick) if str(p) == key.value)


def _waiting(say: Callable[[str], None]) -> Callable[[str], None]:
    return lambda who: say(f"waiting for {who} to finish with this folder")
