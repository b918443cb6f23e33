"""Run every benchmark, the opt-in ones too, and print one JSON object.

``make bench`` runs the default set through ``dmlsched bench --json``; this
script adds the long opt-in figures (e.g. ``scale_pdors_s``) and the machine
description, for the numbers reported on issues::

    .venv/bin/python benchmarks/run_all.py > bench.json
"""

from __future__ import annotations

import json
import os
import platform

from dmlsched.bench import load, run_all


def main() -> None:
    figures: dict[str, object] = dict(run_all(list(load())))
    figures["machine"] = {
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "loadavg_1m": os.getloadavg()[0],
    }
    print(json.dumps(figures, sort_keys=True))


if __name__ == "__main__":
    main()
