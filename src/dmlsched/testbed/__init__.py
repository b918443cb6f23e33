"""The testbed: schedulers' decisions run as real parameter-server training jobs.

Layers, bottom up (each usable on its own; the live service drives the
upper two):

**Emulation** (:mod:`.emulation`, :mod:`.shaping`, :mod:`.state`) —
``Emulation(mode, machines, ext_mbit, state, cpu_share=None, int_mbit=None)``
with ``mode`` ``"netns"`` (a network namespace per machine, veths into a
bridge in a switch namespace, an ``htb`` cap shared per TCP connection on
each machine's external link in both directions, optionally the same on its
loopback) or ``"local"`` (host
namespace, token buckets in the transport).  Every resource is named
``dmlt-<run id>-…`` (``$DMLSCHED_TESTBED_PREFIX`` for ``dmlt``) and
recorded in ``<state_dir>/<run id>.json`` before it is created;
:func:`.state.cleanup` removes what dead runs left,
:func:`.state.live_resources` lists what of a run still exists.

**Process runtime** (:mod:`.runtime`, :mod:`.agent`, :mod:`.training`,
:mod:`.transport`) —

* ``Testbed(machines, run_dir, emulation="local", ext_mbit=20, int_mbit=None,
  delay_ms=None, cpu_share=None, state_dir=...)`` — a context manager: one
  agent process per machine (inside its namespace) that forks PSs and
  workers on request; leaving it removes everything;
* ``Job(testbed, TrainSpec(job, target, mode="sync"|"async", batch, hidden,
  lr, seed))`` — one job over its lifetime: ``start(Placement)``,
  ``request_stop()`` + ``wait_stopped()`` (or ``stop()``) checkpoint and end
  an incarnation, ``status() -> JobStatus`` (work, bytes, loss sums,
  communication / compute seconds, done and its wall time, test accuracy),
  ``poll_exited()``, ``loss_curve()``.  Resize and move are stop + start:
  the new incarnation resumes from the last complete checkpoint.

**Executor** (:mod:`.executor`) — ``ClusterExecutor(testbed, specs)``:
``apply({job: Placement})`` makes one slot's *validated* allocations so
(keep / start / resume / stop / resize / move, all stops first, in
parallel) and returns ``SlotActions``; ``measure() -> {job: JobStatus}``;
``close()``.  It does not validate: callers pass decisions the engine
accepted (:class:`dmlsched.sim.cluster.ClusterState`), as
:func:`.run.run_cluster` does.  What the loops ask of an executor and a
clock: :mod:`.protocols`; :mod:`.fake` has an executor and a clock without
processes.

**Runs and calibration** — :func:`.run.run_cluster` (the slot loop with a
registered scheduler and measured progress), :func:`.predict.predict` (the
simulator's prediction of the same run), :func:`.report.write_run` (every
job counted, in words), :func:`.calibrate.calibrate` (probes →
``profile.json`` for ``--speed``; :func:`.validate.validate`: probes the fit
never saw), :func:`.workload.testbed_workload`, :func:`.pooled.pooled_errors`
(errors over the jobs of many runs).  CLI: ``dmlsched testbed run |
calibrate | cleanup`` (:mod:`.cli`).  ``edge-cloud`` and ``geo`` in
closed loop: :func:`.edge_geo.run_edge_cloud` and :func:`.edge_geo.run_geo`
drive the engine states with measured progress (mini-batches per trained
chunk; GB trained, with real data moves), executor and clock replaceable.
See docs/testbed.md.
"""

__all__: list[str] = []
