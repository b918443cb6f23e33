"""The engines: one module per setting, each of the same shape.

Where things live (the same for every setting ``S`` in cluster, interval,
edge-cloud, geo):

==============================  ==========================================
``model/<S>.py``                the setting's jobs, system (cluster, sites,
                                edge servers; the interval setting's is the
                                workload's capacity vector), workload and
                                decision types
``model/views.py``              the four read-only views, side by side
``schedulers/protocols.py``     one protocol per setting (imports ``model``)
``sim/<S>.py``                  the engine: ``read_decision`` (the boundary:
                                the scheduler's decision read once into the
                                engine's plain structures), ``check_*`` (the
                                paper's constraints), ``simulate_<S>`` (the
                                loop, registered with ``register_engine``);
                                ``sim/cluster/`` is one package of small
                                modules: ``referee`` (reading and the
                                constraints), ``fast`` (faster reads of the
                                same), ``state`` (``ClusterState``, driven by
                                ``simulate``, the testbed and the service),
                                ``simulate`` (the event-driven driver)
``sim/state.py``                the engine-state protocol every driver drives
``sim/boundary.py``             what the four boundaries share: per-run
                                copies for views (:func:`private_copy`,
                                frozen arrays) and exact-type readers
``sim/engine.py``               :class:`RunResult` and ``simulate(setting, …)``
``sim/events.py``               the event log
==============================  ==========================================

Dependencies point one way: ``sim`` imports ``schedulers.protocols`` and
``model``; nothing under ``model``, ``schedulers`` or ``solvers`` imports
``sim``.
"""
