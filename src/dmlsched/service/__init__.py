"""The live scheduler service: ``dmlsched serve``, its agents and its exports.

* :mod:`~dmlsched.service.store` — the durable log (SQLite WAL or PostgreSQL);
* :mod:`~dmlsched.service.core` — the live ``cluster`` engine, rebuilt from the log;
* :mod:`~dmlsched.service.app` — the HTTP/JSON API, metrics and dashboard;
* :mod:`~dmlsched.service.agent` — one per machine, runs its part on the testbed;
* :mod:`~dmlsched.service.k8s` — TFJob and Volcano Job manifests of an allocation.

Dependencies point one way: ``service -> sim -> schedulers -> model``.
"""
