"""``credit``'s ``until`` where a decision holds one slot (edge-cloud, geo, interval)."""

from __future__ import annotations

import pytest

from dmlsched.sim.state import one_slot


@pytest.mark.parametrize("until", [None, 4])
def test_the_next_slot_or_none_is_taken(until: int | None) -> None:
    one_slot("a geo decision", 3, until)


@pytest.mark.parametrize("until", [3, 5, 0])
def test_any_other_until_is_refused_naming_the_next_slot(until: int) -> None:
    with pytest.raises(ValueError, match=rf"until={until}: a geo decision holds one slot \(4\)"):
        one_slot("a geo decision", 3, until)
