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
                                engine's plain structures), the engine state
                                (``reveal`` · ``accept`` · ``credit`` ·
                                ``result``, :mod:`dmlsched.sim.state`) and
                                ``simulate_<S>`` (its driver)
``sim/<S>_referee.py``          the referee: the paper's constraints on one
                                decision, with equation numbers (edge-cloud,
                                geo, interval; fast paths behind ``accept``
                                are tested to give its exact answer)
``sim/cluster/``                the cluster engine, one package of small
                                modules: ``referee`` (reading and the
                                constraints), ``fast`` (faster reads of the
                                same), ``state`` (``ClusterState``),
                                ``simulate`` (the event-driven driver)
``sim/drive.py``                ``simulate``'s driver of a slot-by-slot state;
                                the bound on measured work (every setting)
``sim/state.py``                the engine-state protocol every driver drives;
                                what a one-slot state credits (``Credited``)
``sim/boundary.py``             what the four boundaries share: per-run
                                copies for views (:func:`private_copy`,
                                frozen arrays) and exact-type readers
``sim/run.py``                  :class:`RunResult` and the ``Progress``
                                callback, below every engine
``sim/engine.py``               ``simulate(setting, …)``: picks the
                                setting's ``simulate_<S>`` (above them all)
``sim/events.py``               the event log
==============================  ==========================================

Dependencies point one way: ``sim`` imports ``schedulers.protocols`` and
``model``; nothing under ``model``, ``schedulers`` or ``solvers`` imports
``sim``.
"""
