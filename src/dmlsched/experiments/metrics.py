"""What each metric and sweep parameter means, in words with units, and its domain.

Also how a cell (one scheduler at one point, over seeds) is printed:
:func:`cell_stats` and :func:`format_cell`, shared by the report, the plots
and the CLI's table.

The report and the plots take titles, axis labels and the range an interval
may cover from here, so no figure shows a raw name (``total_utility``), a
unit-less axis, an error bar below 0 or a utilization above 1.  A metric not
listed gets its name in words and no unit (:func:`describe`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dmlsched.experiments.catalogue import PaperValue
from dmlsched.experiments.claims import mean_ci

__all__ = ["Cell", "Metric", "cell_stats", "describe", "format_cell", "format_paper", "param_label"]


@dataclass(frozen=True)
class Metric:
    """``label`` (words), ``unit`` ("" when dimensionless counts are obvious), domain."""

    label: str
    unit: str = ""
    low: float | None = None  # smallest possible value (intervals are clipped to it)
    high: float | None = None  # largest possible value

    @property
    def axis(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label

    def clip(self, lo: float, hi: float) -> tuple[float, float]:
        """An interval [lo, hi] cut to the metric's domain."""
        if self.low is not None:
            lo, hi = max(lo, self.low), max(hi, self.low)
        if self.high is not None:
            lo, hi = min(lo, self.high), min(hi, self.high)
        return lo, hi


def _share(label: str) -> Metric:
    return Metric(label, "fraction of capacity", 0.0, 1.0)


_METRICS: dict[str, Metric] = {
    "total_utility": Metric("Total utility", "sum of job utilities", 0.0),
    "median_training_time": Metric("Median training time, unfinished = T − a", "slots", 0.0),
    "median_training_time_t": Metric("Median training time, unfinished = T", "slots", 0.0),
    "completion_rate": Metric("Jobs finished within T", "fraction of jobs", 0.0, 1.0),
    "single_machine_share": Metric("Allocations on one machine", "fraction of job-slots", 0.0, 1.0),
    "mean_training_time": Metric("Mean training time", "slots", 0.0),
    "completed_jobs": Metric("Completed jobs", "jobs", 0.0),
    "admitted_jobs": Metric("Admitted jobs", "jobs", 0.0),
    "rejected_jobs": Metric("Rejected jobs", "jobs", 0.0),
    "mean_jct": Metric("Mean job completion time", "slots", 0.0),
    "mean_jct_s": Metric("Mean job completion time", "s", 0.0),
    "alone_mean_jct_s": Metric("Mean time alone on the requested GPUs", "s", 0.0),
    "total_jct": Metric("Total job completion time", "slots", 0.0),
    "jct_rate": Metric("Total JCT ÷ SRTF's", "ratio", 0.0),
    "jct_rate_edge": Metric("Total JCT ÷ edge-only SRTF's", "ratio", 0.0),
    "mean_progress": Metric("Mean share of work done by the horizon", "fraction", 0.0, 1.0),
    "mean_workers": Metric("Workers per running job", "workers", 0.0),
    "mean_utilization": _share("Mean utilization"),
    "utilization": _share("Edge utilization"),
    "preemptions": Metric("Preemptions", "count", 0.0),
    "makespan": Metric("Makespan", "slots", 0.0),
    "competitive_ratio": Metric("Competitive ratio", "optimum ÷ ours", 0.0),
    "approx_ratio": Metric("Approximation ratio", "ours ÷ optimum", 0.0),
    "performance_ratio": Metric("Performance ratio", "ours ÷ optimum", 0.0),
    "around_ratio": Metric("Rounding ratio", "A_round ÷ A_fractional", 0.0),
    "relaxation_gap": Metric(
        "Relaxation gap", "A_fractional at Eq. (2) prices ÷ its P_f objective", 0.0
    ),
    "rounding_loss": Metric("Rounding loss", "ours ÷ A_fractional at Eq. (2) prices", 0.0),
    "performance_ratio_ub": Metric(
        "Performance ratio, upper estimate", "ours ÷ MILP's proved bound", 0.0
    ),
    "opt_cost_bound": Metric("MILP's proved lower bound on the optimal cost", "USD", 0.0),
    "opt_optimal": Metric("MILP proved optimal", "share of runs", 0.0, 1.0),
    "utility_gain": Metric("Utility gain over OASiS", "ratio", 0.0),
    "used_resource_ratio": Metric("Used ÷ user-specified resources", "ratio", 0.0),
    "rounding_attempts": Metric("Rounding attempts per rounding", "attempts", 0.0),
    "rounding_ratio": Metric("Rounded cost ÷ LP cost", "ratio", 0.0),
    "opt_utility": Metric("Offline optimum's total utility", "sum of job utilities", 0.0),
    "optimum_utility": Metric("Optimum's total utility", "sum of job utilities", 0.0),
    "oasis_utility": Metric("OASiS's total utility", "sum of job utilities", 0.0),
    "opt_gap_open": Metric("MILP stopped before proving optimality", "share of runs", 0.0, 1.0),
    "opt_bound": Metric("Offline optimum's upper bound (MILP dual bound)", "sum of job utilities"),
    "opt_replay_utility": Metric(
        "Optimum's schedule replayed in the engine", "sum of job utilities", 0.0
    ),
    "competitive_ratio_bound": Metric("Competitive ratio from the MILP bound", "bound ÷ ours", 0.0),
    "excluded": Metric("Excluded (OPT = ALG = 0: no ratio)", "share of runs", 0.0, 1.0),
    "probe_failures": Metric("Probes without a feasible rounding", "share of probes", 0.0, 1.0),
    "rounding_failures": Metric("Failed roundings", "count", 0.0),
    "roundings": Metric("Roundings probed", "count", 0.0),
    "lp_bound": Metric("Lower bound on the optimal total JCT", "slots", 0.0),
    "lp_relaxation": Metric("LP relaxation of ILP (4)", "slots", 0.0),
    "opt_bound_rate": Metric("Optimum's lower bound ÷ SRTF's total JCT", "ratio", 0.0),
    "cloud_chunk_share": Metric("Chunks trained in the cloud", "fraction", 0.0, 1.0),
    "fractional_ratio": Metric("A_online's objective ÷ LP relaxation", "ratio", 0.0),
    "afrac_ratio": Metric("A_fractional ÷ P_f optimum", "ratio", 0.0),
    "deploy_share": Metric("Deployment's share of the total cost", "fraction", 0.0, 1.0),
    "opt_total_cost": Metric("Optimum's total cost", "USD", 0.0),
    "total_cost": Metric("Total cost", "USD", 0.0),
    "cost_transfer": Metric("Data transfer cost", "USD", 0.0),
    "cost_resource": Metric("Resource cost", "USD", 0.0),
    "cost_deploy": Metric("Deployment cost", "USD", 0.0),
    "cost_communication": Metric("Communication cost", "USD", 0.0),
    # testbed (real processes; ``sim_<metric>`` = the simulator's value, see describe)
    "median_sim_error": Metric("Median |simulated − real| ÷ real JCT", "fraction", 0.0),
    "median_sim_error_eq1": Metric("Median JCT error with the Eq. (1) fit", "fraction", 0.0),
    "median_sim_error_nominal": Metric("Median JCT error before calibration", "fraction", 0.0),
    "median_replay_error": Metric("Median JCT error, decisions replayed", "fraction", 0.0),
    "p90_sim_error": Metric("90th percentile of |simulated − real| ÷ real JCT", "fraction", 0.0),
    "finished_share_real": Metric("Started jobs the testbed finished", "fraction", 0.0, 1.0),
    "finished_share_sim": Metric("Started jobs the simulator finished", "fraction", 0.0, 1.0),
    "median_slot_rate_error": Metric(
        "Median |measured − model| ÷ model work in a kept slot", "fraction", 0.0
    ),
    "counted_jobs": Metric("Jobs either side started", "jobs", 0.0),
    "censored_jobs": Metric("Jobs unfinished at the run's end (censored)", "jobs", 0.0),
    "distorted_slots": Metric("Slots where deciding and reconfiguring took > 10%", "slots", 0.0),
    "overrun_slots": Metric("Slots where deciding and reconfiguring overran", "slots", 0.0),
    "loaded_slots": Metric("Slots begun with the load average above the CPUs", "slots", 0.0),
    "load_start": Metric("Load average when the run started", "runnable processes", 0.0),
    "load_end": Metric("Load average when the run ended", "runnable processes", 0.0),
    "mean_real_jct": Metric("Mean measured job completion time", "slots", 0.0),
    "mean_sim_jct": Metric("Mean simulated job completion time", "slots", 0.0),
    "total_utility_real": Metric("Total utility, measured", "sum of job utilities", 0.0),
    "total_utility_sim": Metric("Total utility, simulated", "sum of job utilities", 0.0),
    "total_bytes": Metric("Bytes between PSs and workers", "bytes", 0.0),
    "total_preemptions": Metric("Preemptions", "count", 0.0),
    "wall_seconds": Metric("Wall time of the run", "s", 0.0),
    "comm_seconds": Metric("Workers' communication time", "s", 0.0),
    "jct_error": Metric("|Simulated − real| ÷ real total JCT", "fraction", 0.0),
    "slots_run": Metric("Slots the testbed ran", "slots", 0.0),
    "total_cost_error": Metric("|Simulated − real| ÷ real total cost", "fraction", 0.0),
    "moved_bytes": Metric("Data moved between zones", "bytes", 0.0),
    "model_total_cost": Metric("Total cost simulated at the model's speeds", "USD", 0.0),
    "unprocessed_gb": Metric("Data left untrained when jobs ended", "GB", 0.0),
}
_PARAMS = {
    "machines": "Machines H",
    "jobs": "Jobs I",
    "servers": "Edge servers",
    "dcs": "Data centers",
    "data_gb": "Data per job per slot (GB)",
    "slots": "Time slots T",
    "jobs_per_slot": "Jobs arriving per slot",
    "g_delta": "Pre-rounding gain G_δ",
    "g": "Pre-rounding gain G",
    "bandwidth_ratio": "Internal ÷ external bandwidth b^(i)/b^(e)",
    "units": "Cluster resources (capacity units)",
    "mode:jobs": "SGD mode : jobs",
    "workload": "Workload",
    "setup": "Setup",
    "prices": "Prices",
    "deploy": "Reading of the deployment cost c_i",
    "emulation": "Machine emulation (local | netns)",
    "zones": "Zones (emulated data centers)",
}


def describe(metric: str) -> Metric:
    """The metric's description; per-resource utilizations and unknown names included."""
    if metric in _METRICS:
        return _METRICS[metric]
    if metric.startswith("sim_") and metric[4:] in _METRICS:  # testbed: the simulator's value
        d = _METRICS[metric[4:]]
        return Metric(f"{d.label}, simulated", d.unit, d.low, d.high)
    base, sep, eps = metric.rpartition("_eps")  # one curve per ε (A_online, mlBroker)
    if sep and base in _METRICS:
        d = _METRICS[base]
        return Metric(f"{d.label}, ε = {eps}", d.unit, d.low, d.high)
    base, sep, rng = metric.rpartition("_P")  # one curve per P_i range (mlBroker Fig. 6)
    if sep and base in _METRICS:
        d = _METRICS[base]
        return Metric(f"{d.label}, P_i ∈ [{rng.replace('-', ', ')}]", d.unit, d.low, d.high)
    if metric.startswith("mean_utilization_"):
        res = metric.removeprefix("mean_utilization_")
        return _share(f"Mean {res.upper() if len(res) <= 3 else res} utilization")
    words = metric.replace("_", " ")
    return Metric(words[:1].upper() + words[1:])


def param_label(param: str) -> str:
    """The sweep parameter in words (with its unit where it has one)."""
    return _PARAMS.get(param, param.replace("_", " ").capitalize())


@dataclass(frozen=True)
class Cell:
    """Mean, clipped interval and seed counts of one (scheduler, point)."""

    mean: float  # NaN when undefined
    low: float  # interval, clipped to the metric's domain
    high: float
    n: int  # finite seeds
    total: int  # all seeds
    half: float = 0.0  # the unclipped half-width
    clipped: bool = False
    excluded: int = 0  # NaN seeds: undefined there (e.g. OPT = ALG = 0), never a number
    infinite: int = 0  # ±inf seeds (e.g. OPT > 0 = ALG): a value, but no mean
    sign: float = 1.0  # of the infinite seeds when every non-excluded seed is infinite

    @property
    def defined(self) -> bool:
        return self.n > 0


def cell_stats(values: np.ndarray, metric: Metric) -> Cell:
    v = np.asarray(values, dtype=float)
    m, ci = mean_ci(v)
    n = int(np.isfinite(v).sum())
    excluded = int(np.isnan(v).sum())
    inf = v[np.isinf(v)]
    sign = 1.0 if inf.size == 0 or np.all(inf > 0) else -1.0 if np.all(inf < 0) else 0.0
    if n == 0:
        nan = float("nan")
        return Cell(nan, nan, nan, 0, v.size, excluded=excluded, infinite=inf.size, sign=sign)
    lo, hi = metric.clip(m - ci, m + ci)
    return Cell(
        m, lo, hi, n, v.size, ci, (lo, hi) != (m - ci, m + ci), excluded, int(inf.size), sign
    )


def format_cell(c: Cell) -> str:
    """ "mean ± half-width", "mean (1 seed)", "inf" or "undefined"; notes left-out seeds.

    Seeds left out are told apart: *infinite* (a ratio over a zero: a value,
    just not one to average) and *excluded* (NaN: undefined there, e.g.
    OPT = ALG = 0, and never read as any number).
    """
    s = "s" * (c.total != 1)
    if not c.defined:
        if c.infinite:
            body = {1.0: "inf", -1.0: "-inf"}.get(c.sign, "±inf")
            note = f"{c.infinite} of {c.total} seed{s}"
            if c.excluded:
                note += f"; {c.excluded} excluded"
            return f"{body} ({note})"
        return f"undefined (all {c.total} seed{s} excluded)"
    if c.n == 1:
        text = f"{c.mean:.4g} (1 seed)"
    elif c.clipped:  # the interval hit the domain's edge: print it, not a ± below 0
        text = f"{c.mean:.4g} [{c.low:.3g}, {c.high:.3g}]"
    else:
        text = f"{c.mean:.4g} ± {c.half:.2g}"
    notes = []
    if c.infinite:
        notes.append(f"+{c.infinite} of {c.total} seeds infinite")
    if c.excluded:
        notes.append(f"{c.excluded} of {c.total} seeds undefined, excluded")
    if notes:
        text += f" ({'; '.join(notes)})"
    return text


def format_paper(p: PaperValue) -> str:
    if isinstance(p.value, tuple):
        return f"{p.value[0]:.4g}–{p.value[1]:.4g} ({p.source})"
    return f"{p.value:,.6g} ({p.source})"
