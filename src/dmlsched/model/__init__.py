"""The model: frozen dataclasses and pure functions, no I/O, no randomness.

One module per setting, each holding that setting's jobs, system, workload
and decision types (``cluster.py``, ``interval.py``, ``edge_cloud.py``,
``geo.py``); the four read-only views a scheduler is handed live side by
side in ``views.py``; speed models (one per paper) in ``speed/``; utility
functions in ``utility.py``.  This package imports nothing of ours but
itself and :mod:`dmlsched.errors`; the engines (:mod:`dmlsched.sim`) and the
schedulers depend on it, never the other way round.
"""
