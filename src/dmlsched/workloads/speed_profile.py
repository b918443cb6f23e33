"""Read a testbed speed profile (``dmlsched testbed calibrate`` writes it).

A profile is JSON: ``{"format": "dmlsched-speed-profile/1", "default": FORM,
"slot_seconds": S, "ext_mbit": [...], "grad_bytes": g, "batch": F,
"forms": {"eq1": {...}, "links": {...}}, "fit": {...}, "restart": {"start_s": ...,
"restart_s": ...}, "pacing": {"bucket_bytes": ..., "lag_s": ...}}`` — the fitted
constants of :mod:`dmlsched.model.speed.calibrated` plus the fit's errors, the measured
cost of starting an incarnation (absent: none) and, for the ``local`` emulation, its
token buckets' depth and the senders' measured pacing lag (absent: neither).
:func:`load_speed_profile` turns it into the engine's speed model
(``ClusterWorkload.speed``); ``--speed PATH`` options call it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dmlsched.errors import InvalidInput
from dmlsched.model.speed.calibrated import FORMS, CalibratedSpeed

__all__ = ["PROFILE_FORMAT", "load_speed_profile", "profile_speed"]

PROFILE_FORMAT = "dmlsched-speed-profile/1"


def profile_speed(
    profile: dict,
    *,
    form: str | None = None,
    slot_seconds: float | None = None,
    ext_mbit: tuple[float, ...] | None = None,
    int_mbit: tuple[float, ...] | None = None,
) -> CalibratedSpeed:
    """The profile's model (``form`` or its default) for a run's slot length and caps."""
    if profile.get("format") != PROFILE_FORMAT:
        raise InvalidInput("speed profile format", profile.get("format"), PROFILE_FORMAT)
    form = form or profile["default"]
    if form not in FORMS or form not in profile["forms"]:
        raise InvalidInput("speed profile form", form, " | ".join(sorted(profile["forms"])))
    consts = {k: float(v) for k, v in profile["forms"][form].items()}
    if form == "eq1":
        consts["ref_mbit"] = float(profile["ext_mbit"][0])
    return CalibratedSpeed(
        form=form,
        slot_seconds=float(slot_seconds or profile["slot_seconds"]),
        grad_bytes=float(profile["grad_bytes"]),
        ext_mbit=tuple(ext_mbit or profile["ext_mbit"]),
        int_mbit=tuple(int_mbit or profile.get("int_mbit", (0.0,))),
        start_s=float(profile.get("restart", {}).get("start_s", 0.0)),
        restart_s=float(profile.get("restart", {}).get("restart_s", 0.0)),
        bucket_bytes=float(profile.get("pacing", {}).get("bucket_bytes", 0.0)),
        pacing_lag_s=float(profile.get("pacing", {}).get("lag_s", 0.0)),
        **consts,
    )


def load_speed_profile(path: Path | str, **overrides: Any) -> CalibratedSpeed:
    """Read ``path`` and build its speed model (see :func:`profile_speed`)."""
    p = Path(path)
    try:
        blob = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise InvalidInput("speed", str(p), f"a speed profile JSON file ({e})") from e
    if not isinstance(blob, dict):
        raise InvalidInput("speed", str(p), "a JSON object")
    return profile_speed(blob, **overrides)
