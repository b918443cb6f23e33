"""The edge-cloud engine's and schedulers' results, pinned: a change meant to make them
faster must leave every run's bytes as they were.

Each case runs one edge-cloud scheduler (both readings of the job-level baselines'
``cloud_overflow``) on a Sec. V workload, with and without a storage limit, and hashes
everything the run returns (:func:`tests.sim.test_pinned_bytes.digest`).  The digests
were taken before the job-level baselines' per-slot work was vectorised (``main`` at
5204b3a); a digest that moves is a result that moved.
"""

from __future__ import annotations

import pytest

from dmlsched.rng import make_rng, spawn
from dmlsched.schedulers.protocols import make_scheduler
from dmlsched.sim.engine import simulate
from dmlsched.workloads.edge_cloud import edge_cloud_workload, node_list_path
from tests.sim.test_pinned_bytes import digest

# the servers are drawn from the Alibaba GPU node list (synthetic ranges without it)
pytestmark = pytest.mark.skipif(
    node_list_path() is None, reason="../shared/traces/alibaba-gpu-v2023 absent"
)

_SERIES = {
    "a-online": {},
    "a-online+": {},
    "a-online-edge": {},
    "batchsche": {},
    "srtf": {},
    "srtf-edge": {"cloud_overflow": False},
    "tiresias-l": {},
    "tiresias-l-edge": {"cloud_overflow": False},
}


def _run(series: str, storage: bool) -> str:
    # m_j of Figs. 12/13 keeps the workers contended; 0.1 GB a server binds the edge-only runs
    wl = edge_cloud_workload(
        60, 12, 40, make_rng(3), storage_gb=0.1 if storage else None, m_range=(0.001, 0.004)
    )
    params = _SERIES[series]
    name = series.removesuffix("-edge") if params else series
    _, rng = spawn(make_rng(0), 2)
    sched = make_scheduler("edge-cloud", name, **params)
    return digest(simulate("edge-cloud", wl, sched, rng))


PINNED = {  # (series, storage limit) -> sha256
    ("a-online", False): "a8bd3de7cede9de21c03478468a9ee56883aa28bc78651ca7dab4effaef345b2",
    ("a-online", True): "44b3f6bd36450b76de99a34ac1b9c22637b05e43ddf07268a4800fdc99ce5eea",
    ("a-online+", False): "1b904260f118cf1bd4c2a8f37d713bee6ab0fc901e1e1a923ff92a5d243274db",
    ("a-online+", True): "1b904260f118cf1bd4c2a8f37d713bee6ab0fc901e1e1a923ff92a5d243274db",
    ("a-online-edge", False): "f284138adf2253f19f62c11574ea2e1c313a468cd0e48747bfec62d7f03bb085",
    ("a-online-edge", True): "35dfb9f393343d2a91743812594a1c1e39d558ef9be137e61e147347041c2ae2",
    ("batchsche", False): "518efbd77f2b01f59165b586ab4e74d0e0f459d1fcfa76da53b9bad583258447",
    ("batchsche", True): "518efbd77f2b01f59165b586ab4e74d0e0f459d1fcfa76da53b9bad583258447",
    ("srtf", False): "382a9992e2e66070b8e67b79daed9d4b700e25e1ebefbc17174a7be77e710fd3",
    ("srtf", True): "382a9992e2e66070b8e67b79daed9d4b700e25e1ebefbc17174a7be77e710fd3",
    ("srtf-edge", False): "7a7f9cd699a1a4b6da3a06cf356db55c765e06efaf2e29b29ed9b0b282d99586",
    ("srtf-edge", True): "473761f87cb58c4c8909dadabb25f8fa0b72f43858de4e308119f0e70105bc73",
    ("tiresias-l", False): "2d5d78b35fcdae0d49c5e9808354c0b17e6100e4745736803ae3afbf55a626a6",
    ("tiresias-l", True): "2d5d78b35fcdae0d49c5e9808354c0b17e6100e4745736803ae3afbf55a626a6",
    ("tiresias-l-edge", False): "5de4dc21f70d7fc0b4098a6fc3e2e575c1e97bc2a107d8679027a03adac3dc22",
    ("tiresias-l-edge", True): "c22d126d8a80ba52c394d34db566cfedd48c965ab27047f53ce4b51cc0bb8ec5",
}


@pytest.mark.parametrize(("series", "storage"), sorted(PINNED))
def test_edge_cloud_runs_keep_their_bytes(series: str, storage: bool) -> None:
    assert _run(series, storage) == PINNED[(series, storage)]
