"""``ablation-pdors-*``'s rows: every option of pd-ors+ off in turn, and alone on pd-ors."""

from __future__ import annotations

from dmlsched.experiments.defs.pdors_ablation import VARIANTS
from dmlsched.schedulers.cluster.pdors import PLUS, PRINTED


def test_every_option_has_a_no_row_and_a_with_row() -> None:
    for option in PLUS:
        assert VARIANTS[f"pd-ors+ no-{option}"] == ("pd-ors+", {option: PRINTED[option]})
        name, opts = VARIANTS[f"pd-ors with-{option}"]
        assert name == "pd-ors" and opts[option] == PLUS[option]


def test_the_per_class_rounding_row_on_pd_ors_also_takes_the_interior_split() -> None:
    # rounding="class" draws per class only where the split is even (vertex="interior"):
    # on pd-ors's vertex fill alone it would run pd-ors unchanged
    assert VARIANTS["pd-ors with-rounding"] == (
        "pd-ors",
        {"vertex": "interior", "rounding": "class"},
    )
    assert VARIANTS["pd-ors+ no-rounding"] == ("pd-ors+", {"rounding": "machine"})
