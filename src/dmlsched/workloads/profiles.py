"""The Pollux profiles (read in place) and the six applications they measure.

Files: ``<dir>/<application>/placements.csv`` (``placement,local_bsz,
step_time,sync_time``) and ``scalability.csv`` (``num_nodes,num_replicas,
local_bsz,step_time,sync_time``); see ``../shared/peers/pollux-osdi21/README.md``
(Apache-2.0, petuum/adaptdl ``osdi21-artifact``).  Malformed lines raise
:class:`InvalidInput` naming file, line and field.

Application constants (:data:`APPLICATIONS`) — what a profile does not say:

==========  ======================  ======  ============  ==========  =========
app         model / data            epochs  samples/epoch  parameters  max local
==========  ======================  ======  ============  ==========  =========
bert        BERT-base / SQuAD 1.1       2        88,641       110 M        12
cifar10     ResNet-18 / CIFAR-10      100        50,000     11.17 M      1024
deepspeech2 DeepSpeech2 / CMU-ARCTIC   80         7,200        38 M        80
imagenet    ResNet-50 / ImageNet       90     1,281,167     25.56 M       200
ncf         NeuMF / MovieLens-1M       10     4,970,845       1.9 M     32768
yolov3      YOLOv3 / PASCAL VOC        50        16,551     61.95 M         8
==========  ======================  ======  ============  ==========  =========

* epochs: the Pollux simulator's ``max_epochs`` (its ``applications.py``);
* samples per epoch: the datasets' published training-set sizes (BERT:
  SQuAD features after tokenisation; NCF: 994,169 positive ratings × (1 + 4
  sampled negatives)); DeepSpeech2's ≈ 7,200 is read off the Pollux
  artifact's validation trace (≈ 45 steps × 160 per epoch) — approximate;
* parameters: published counts (ResNet-18 CIFAR variant, ResNet-50, BERT-base,
  YOLOv3 Darknet-53); DeepSpeech2 (≈ 38 M) and NeuMF on ML-1M (≈ 1.9 M:
  9,746 users+items × 192 embedding values + MLP) are approximate; the
  gradient is fp32, g = 4 B × parameters;
* max local batch: the largest measured local batch (YOLOv3: 8, as the
  Pollux simulator overrides).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dmlsched.errors import InvalidInput
from dmlsched.model.speed.measured import AppProfile, normalise_placement

__all__ = [
    "APPLICATIONS",
    "Application",
    "default_profile_dir",
    "load_profile",
    "load_profiles",
]


@dataclass(frozen=True)
class Application:
    name: str
    model: str
    epochs: int
    samples: int  # per epoch
    params_m: float  # millions of parameters

    @property
    def grad_mb(self) -> float:
        """g: fp32 gradient size in MB."""
        return 4.0 * self.params_m


APPLICATIONS: dict[str, Application] = {
    a.name: a
    for a in (
        Application("bert", "BERT-base / SQuAD 1.1", 2, 88_641, 110.0),
        Application("cifar10", "ResNet-18 / CIFAR-10", 100, 50_000, 11.17),
        Application("deepspeech2", "DeepSpeech2 / CMU-ARCTIC", 80, 7_200, 38.0),
        Application("imagenet", "ResNet-50 / ImageNet", 90, 1_281_167, 25.56),
        Application("ncf", "NeuMF / MovieLens-1M", 10, 4_970_845, 1.9),
        Application("yolov3", "YOLOv3 / PASCAL VOC", 50, 16_551, 61.95),
    )
}
_MAX_LOCAL_OVERRIDE = {"yolov3": 8}


def default_profile_dir() -> Path | None:
    """``<repo>/../shared/peers/pollux-osdi21/profiles`` if present."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        cand = parent / "shared" / "peers" / "pollux-osdi21" / "profiles"
        if cand.is_dir():
            return cand
    return None


def _rows(path: Path, columns: tuple[str, ...]) -> list[tuple[int, list[float]]]:
    if not path.is_file():
        raise InvalidInput("profile", str(path), "an existing file")
    out = []
    with path.open(newline="") as f:
        reader = csv.reader(f)
        header = next(reader, None)
        if header is None or tuple(h.strip() for h in header) != columns:
            raise InvalidInput("header", header, ",".join(columns), f"{path}:1")
        for i, row in enumerate(reader, start=2):
            if not row:
                continue
            if len(row) != len(columns):
                raise InvalidInput("columns", len(row), f"{len(columns)} values", f"{path}:{i}")
            vals = []
            for name, v in zip(columns, row, strict=True):
                try:
                    x = float(v)
                except ValueError:
                    raise InvalidInput(name, v, "a number", f"{path}:{i}") from None
                if not np.isfinite(x) or x < 0 or (name != "sync_time" and x <= 0):
                    raise InvalidInput(name, v, "a finite number > 0", f"{path}:{i}")
                vals.append(x)
            out.append((i, vals))
    if not out:
        raise InvalidInput("rows", 0, ">= 1 data row", str(path))
    return out


def load_profile(directory: Path, name: str) -> AppProfile:
    """One application's :class:`AppProfile` from ``directory/name``."""
    base = directory / name
    prow = _rows(base / "placements.csv", ("placement", "local_bsz", "step_time", "sync_time"))
    srow = _rows(
        base / "scalability.csv",
        ("num_nodes", "num_replicas", "local_bsz", "step_time", "sync_time"),
    )
    by: dict[tuple[int, ...], list[tuple[float, float, float]]] = {}
    for line, (pl, lb, st, sy) in prow:
        digits = str(int(pl))
        if int(pl) != pl or "0" in digits:
            raise InvalidInput("placement", pl, "GPUs per node, digits 1-9", f"{base}:{line}")
        key = normalise_placement([int(c) for c in digits])
        by.setdefault(key, []).append((lb, st, sy))
    placements: dict[tuple[int, ...], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    grid_acc: dict[tuple[int, int, float], list[tuple[float, float]]] = {}
    for key, vals in by.items():
        arr = np.array(sorted(vals), dtype=float)
        # duplicate local batches: average them so interpolation is well defined
        lbs, idx = np.unique(arr[:, 0], return_inverse=True)
        step = np.bincount(idx, arr[:, 1]) / np.bincount(idx)
        sync = np.bincount(idx, arr[:, 2]) / np.bincount(idx)
        placements[key] = (lbs, step, sync)
        for lb, a, b in arr:
            grid_acc.setdefault((len(key), sum(key), lb), []).append((a, b))
    rows = [(n, r, lb, *np.mean(v, axis=0)) for (n, r, lb), v in grid_acc.items()]
    rows += [tuple(v) for _, v in srow]
    max_local = _MAX_LOCAL_OVERRIDE.get(name, int(max(v[0][-1] for v in placements.values())))
    return AppProfile(name, placements, np.array(rows, dtype=float), max_local)


_CACHE: dict[tuple, dict[str, AppProfile]] = {}


def load_profiles(directory: Path | None = None) -> dict[str, AppProfile]:
    """Every application of :data:`APPLICATIONS` from ``directory`` (default: shared).

    Parsed once per process and folder (keyed by the files' paths, sizes and
    modification times, so an edited file is re-read); profiles are read-only.
    """
    d = directory or default_profile_dir()
    if d is None:
        raise InvalidInput(
            "profiles",
            "(none found)",
            "the Pollux profiles folder in ../shared/peers/pollux-osdi21/profiles beside the "
            "checkout — docs/data.md says where to get it — or --profiles PATH",
        )
    if not Path(d).is_dir():
        raise InvalidInput("profiles", str(d), "an existing pollux-osdi21/profiles folder")
    d = Path(d).resolve()
    key: list[object] = [str(d)]
    for name in APPLICATIONS:
        for f in ("placements.csv", "scalability.csv"):
            st = (d / name / f).stat() if (d / name / f).is_file() else None
            key.append((name, f, st.st_size, st.st_mtime_ns) if st else (name, f, None))
    hit = _CACHE.get(tuple(key))
    if hit is None:
        hit = _CACHE[tuple(key)] = {name: load_profile(d, name) for name in APPLICATIONS}
    return dict(hit)
