"""Run an experiment's (scheduler, point, seed) cells: in-process, on a local
process pool, or on a Ray cluster; resumable.

Every finished cell is appended to ``results.csv`` at once; rerunning the same
command computes only the cells not yet in the file, then sorts it, so an
interrupted run resumed gives the same file as an uninterrupted one.
``config.json`` beside the results records what was run; a rerun with a
different configuration into the same folder is refused (InvalidInput).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from dmlsched.errors import InvalidInput
from dmlsched.experiments.catalogue import Experiment, Point
from dmlsched.experiments.results import (
    CellKey,
    append_rows,
    cell_rows,
    done_cells,
    repair,
    sort_results,
)

__all__ = ["RunConfig", "run_experiment"]


@dataclass(frozen=True)
class RunConfig:
    seeds: int
    quick: bool = False
    workers: int | None = None  # None: all cores
    ray: str | None = None  # "local" or a cluster address
    extra: dict[str, Any] | None = None  # recorded in config.json (e.g. compare's flags)


def _cell(
    exp: Experiment, key: CellKey, point: Point, quick: bool
) -> tuple[CellKey, dict[str, float]]:
    return key, exp.run_cell(key.scheduler, point, key.seed, quick)


def _config_blob(exp: Experiment, cfg: RunConfig) -> dict[str, Any]:
    return {
        "experiment": exp.id,
        "setting": exp.setting,
        "param": exp.param,
        "points": [str(p) for p in exp.sweep(cfg.quick)],
        "schedulers": list(exp.schedulers),
        "seeds": cfg.seeds,
        "quick": cfg.quick,
        "extra": cfg.extra or {},
    }


def _check_config(out: Path, blob: dict[str, Any]) -> None:
    path = out / "config.json"
    if path.exists():
        old = json.loads(path.read_text())
        if old != blob:
            diff = sorted(k for k in blob if old.get(k) != blob[k])
            raise InvalidInput(
                "out", str(out), f"a fresh folder or the same configuration (differs in {diff})"
            )
    else:
        path.write_text(json.dumps(blob, indent=2, sort_keys=True) + "\n")


def _pending(exp: Experiment, cfg: RunConfig, done: set[CellKey]) -> list[tuple[CellKey, Point]]:
    cells = []
    for point in exp.sweep(cfg.quick):
        for sched in exp.schedulers:
            for seed in range(cfg.seeds):
                key = CellKey(sched, str(point), seed)
                if key not in done:
                    cells.append((key, point))
    return cells


def _local(
    exp: Experiment, cells: list[tuple[CellKey, Point]], cfg: RunConfig
) -> Iterator[tuple[CellKey, dict[str, float]]]:
    workers = cfg.workers or os.cpu_count() or 1
    if workers <= 1 or len(cells) <= 1:
        for key, point in cells:
            yield _cell(exp, key, point, cfg.quick)
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn")) as pool:
        futures = {pool.submit(_cell, exp, key, point, cfg.quick) for key, point in cells}
        try:
            while futures:
                finished, futures = wait(futures, return_when=FIRST_COMPLETED)
                for fut in finished:
                    yield fut.result()
        except BaseException:
            for fut in futures:
                fut.cancel()
            raise


def _ray(
    exp: Experiment, cells: list[tuple[CellKey, Point]], cfg: RunConfig
) -> Iterator[tuple[CellKey, dict[str, float]]]:
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
    remote = ray.remote(_cell)
    refs = [remote.remote(exp, key, point, cfg.quick) for key, point in cells]
    while refs:
        ready, refs = ray.wait(refs, num_returns=1)
        for r in ready:
            yield ray.get(r)


def run_experiment(
    exp: Experiment,
    out: Path,
    cfg: RunConfig,
    on_progress: Callable[[int, int], None] | None = None,
) -> Path:
    """Run the missing cells of ``exp`` into ``out/results.csv``; returns its path."""
    if cfg.seeds < 1:
        raise InvalidInput("seeds", cfg.seeds, ">= 1")
    if cfg.workers is not None and cfg.workers < 1:
        raise InvalidInput("workers", cfg.workers, ">= 1")
    out.mkdir(parents=True, exist_ok=True)
    _check_config(out, _config_blob(exp, cfg))
    results = out / "results.csv"
    repair(results)
    cells = _pending(exp, cfg, done_cells(results))
    total = len(exp.sweep(cfg.quick)) * len(exp.schedulers) * cfg.seeds
    done = total - len(cells)
    if on_progress:
        on_progress(done, total)
    stream = _ray(exp, cells, cfg) if cfg.ray else _local(exp, cells, cfg)
    for key, metrics in stream:
        append_rows(results, cell_rows(exp.id, exp.setting, key, exp.param, metrics))
        done += 1
        if on_progress:
            on_progress(done, total)
    sort_results(results, [str(p) for p in exp.sweep(cfg.quick)], list(exp.schedulers))
    return results
