"""Sequential looks: stop adding seeds once every claim of an experiment is decided.

``reproduce --until-decided`` plans two looks at an experiment's N seeds
(:func:`plan`): at ⌈N/2⌉ seeds and at N (an experiment run with fewer than
four seeds is run whole, as without the option).  At the first look every claim is
judged, as printed and ``+``; when none is UNDECIDED the run stops there,
else it computes the other seeds and the verdicts are those of the second
look.  REPORTED claims (no verdict) and NOT RUN ones (another experiment's
results missing) never hold a run back.

**The first look reads its intervals at 98.5%, the second at 96.5%**
(:data:`SPEND`: the 5% error a fixed run at 95% allows, split 1.5% + 3.5%
over the looks).  Whichever look a verdict comes from, the chance that some
look's interval misses the true mean is at most 1.5% + 3.5% (a union bound:
no assumption on how the looks' statistics depend on each other), the error
a fixed run of N seeds at 95% allows; looking twice at 95% would not keep
it.  Stricter first, nearer nominal last (in the spirit of O'Brien–Fleming's
boundaries): a run stops early on clear evidence, and the second look's
verdicts stay close to a fixed run's.  The split was chosen on the committed
reproduction's results (``docs/benchmarks.md``): 2.5% + 2.5% stops as many
experiments (20 of 49 with claims, seeds 0–9) but leaves 15 verdicts
UNDECIDED that a fixed run of 10 seeds decides, against 5 here; 1% + 4%
leaves 3 but lets ``mlbroker-fig5``, the catalogue's longest, run to the
end.  Whether a HELD claim is VACUOUS is read at the look that stopped (a
reference still UNDECIDED there is said so, and the claim stays HELD).

The plan is recorded in the run's ``config.json`` (``looks``), so the
reports (:mod:`~dmlsched.experiments.report`, ``reproduction.md``) read every
interval at the looks' confidence and say where the run stopped, from the
results alone; a folder stopped at its first look is complete, not an
interrupted run.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dmlsched.errors import InvalidInput
from dmlsched.experiments.claims import CONFIDENCE, UNDECIDED, ClaimResult, check_both, pct

if TYPE_CHECKING:
    import pandas as pd

    from dmlsched.experiments.catalogue import Experiment

__all__ = [
    "LOOKS",
    "MIN_LOOK",
    "SPEND",
    "Looks",
    "check_seeds",
    "is_open",
    "look_confidence",
    "looks_of",
    "plan",
    "undecided",
]

MIN_LOOK = 2  # seeds: the fewest that give an interval
#: the share of the error 1 − CONFIDENCE each look of a planned run spends (module docstring)
SPEND = (0.3, 0.7)
LOOKS = len(SPEND)


def plan(seeds: int) -> tuple[int, ...]:
    """The looks of a sequential run of ``seeds`` seeds: ⌈seeds/2⌉, then ``seeds``; none
    (a fixed run, at 95%) for fewer than two looks of :data:`MIN_LOOK` seeds."""
    if seeds < LOOKS * MIN_LOOK:
        return ()
    return ((seeds + 1) // 2, seeds)


def check_seeds(seeds: int | None) -> None:
    """Refuse ``--seeds`` too few for :func:`plan`'s looks (None: each experiment's own)."""
    if seeds is not None and seeds < LOOKS * MIN_LOOK:
        raise InvalidInput(
            "seeds", seeds, f">= {LOOKS * MIN_LOOK} with --until-decided (two looks of two)"
        )


def look_confidence(look: int) -> float:
    """Two-sided confidence of the intervals of look ``look`` (1-based) of a planned run."""
    return 1.0 - SPEND[look - 1] * (1.0 - CONFIDENCE)


def undecided(
    exp: Experiment,
    df: pd.DataFrame,
    frames: Mapping[str, pd.DataFrame],
    confidence: float,
) -> list[str]:
    """The claims of ``exp`` (as printed or ``+``) still UNDECIDED on ``df``."""
    out = []
    for c in exp.claims:
        printed, plus, rp = check_both(c, df, exp.schedulers, frames, exp.series, confidence)
        if is_open(printed, rp):
            out.append(printed.text if printed.label == UNDECIDED else f"{printed.text} (`{plus}`)")
    return out


def is_open(printed: ClaimResult, plus: ClaimResult | None) -> bool:
    """Whether a claim judged as printed and ``+`` (None: no ``+`` entry) holds a run back."""
    return printed.label == UNDECIDED or (plus is not None and plus.label == UNDECIDED)


@dataclass(frozen=True)
class Looks:
    """Where a run recorded with looks stands: its plan, the seeds its results hold."""

    looks: tuple[int, ...]
    seeds: int  # whole seeds in the results (every cell of each)
    partial: bool = False  # the results also hold some cells of other seeds

    @property
    def confidence(self) -> float:
        """Of the look the results stand at (the last look's between looks)."""
        return look_confidence(self.at_look or len(self.looks))

    @property
    def at_look(self) -> int | None:
        """The look (1-based) the results stand at, None between looks."""
        if self.partial or self.seeds not in self.looks:
            return None
        return self.looks.index(self.seeds) + 1

    def note(self, stopped: bool) -> str:
        """One sentence for a report; ``stopped``: every claim was decided at this look."""
        at, last, k = self.at_look, self.looks[-1], len(self.looks)
        each = ", ".join(
            f"{seeds} seeds at {pct(look_confidence(i))}" for i, seeds in enumerate(self.looks, 1)
        )
        if at == k:
            return f"all {last} seeds, look {k} of {k} (looks: {each})"
        if at is not None and stopped:
            return f"stopped at {self.seeds} of {last} seeds, every claim decided (looks: {each})"
        return f"{self.seeds} of {last} seeds: incomplete (looks: {each})"

    def complete(self, stopped: bool) -> bool:
        """Whether the run is done: at its last look, or stopped at an earlier one."""
        at = self.at_look
        return at is not None and (at == len(self.looks) or stopped)


def looks_of(
    config: Mapping[str, Any], cells: Iterable[tuple[object, object, object]]
) -> Looks | None:
    """The :class:`Looks` of a run from its ``config.json`` and the (scheduler, point,
    seed) cells of its results (None: a fixed-seeds run)."""
    raw = config.get("looks")
    if not raw:
        return None
    if (
        not isinstance(raw, list)
        or len(raw) != LOOKS
        or any(type(x) is not int or x < MIN_LOOK for x in raw)
        or raw != sorted(set(raw))
    ):
        raise InvalidInput(
            "looks", raw, f"{LOOKS} increasing seed counts >= {MIN_LOOK}", "config.json"
        )
    per = len(config.get("points") or ()) * len(config.get("schedulers") or ())
    counts = Counter(seed for _, _, seed in cells)
    whole = sum(n >= per for n in counts.values())
    return Looks(tuple(raw), whole, partial=whole < len(counts))
