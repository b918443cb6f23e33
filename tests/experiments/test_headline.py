"""The comparison's result in plain words: best and fewest completions, the objective,
what the workload allowed."""

from __future__ import annotations

from dmlsched.experiments.headline import headline
from dmlsched.results import Row


def _rows(setting: str, per: dict[str, dict[str, float]], seeds: int = 2) -> list[Row]:
    return [
        ("compare", setting, s, "workload", "synthetic", seed, m, v)
        for s, metrics in per.items()
        for seed in range(seeds)
        for m, v in metrics.items()
    ]


def test_a_cluster_comparison_names_the_best_the_runner_up_and_the_fewest() -> None:
    wl = {"workload_jobs": 60, "workload_finishable_alone": 57, "workload_horizon": 20}
    rows = _rows(
        "cluster",
        {
            "pd-ors+": {"completed_jobs": 58, "total_utility": 2600, **wl},
            "pd-ors": {"completed_jobs": 58, "total_utility": 2600, **wl},
            "srtf": {"completed_jobs": 30, "total_utility": 1300, **wl},
            "fifo": {"completed_jobs": 6, "total_utility": 130, **wl},
        },
    )
    first, objective, workload = headline(rows)
    assert first == (
        "pd-ors+ and pd-ors completed the most jobs: 58 of 60 (97%) on average over 2 seeds; "
        "next srtf with 30; fewest fifo with 6."
    )
    assert objective == (
        "Total utility (more is better): highest pd-ors+ and pd-ors with 2,600, lowest fifo "
        "with 130 (20× apart)."
    )
    assert workload.startswith("Alone on the empty cluster, 57 of the 60 jobs could finish")


def test_less_is_better_where_the_objective_is_a_time_or_a_cost() -> None:
    rows = _rows("edge-cloud", {"a-online": {"total_jct": 100.0}, "srtf": {"total_jct": 150.0}})
    assert headline(rows) == [
        "Total job completion time (less is better): lowest a-online with 100, highest srtf "
        "with 150 (1.5× apart)."
    ]


def test_a_sweep_gets_no_headline_its_figures_tell_it() -> None:
    rows = _rows("cluster", {"fifo": {"completed_jobs": 1}})
    rows += [(*r[:4], "other", *r[5:]) for r in rows]  # type: ignore[misc]
    assert headline(rows) == []
