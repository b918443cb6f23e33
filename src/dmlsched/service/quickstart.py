"""Quick start: a service running real jobs on three emulated machines, one command.

``make quickstart`` (or ``python -m dmlsched.service.quickstart``) starts
``dmlsched serve --executor local`` (wall clock, measured progress, FIFO with
at most two workers per job) on machines ``m0``, ``m1``, ``m2`` of the
testbed's size (1 GPU, 4 vCPUs, 8 GB, 8 GB; a PS or worker takes 1 vCPU,
1 GB, 1 GB), its embedded executor running every job's processes on this host
as each machine's agent (:class:`QuickStart`), submits a few jobs over HTTP
(an MLP on digits: K = 1,437 samples, E epochs, F = 64), waits until they
complete with real training and prints what happened.  Then the service stays
up — the dashboard at the printed URL, more jobs welcome — until Ctrl-C, or
until it stops, which it says (exit status 1); ``--exit`` stops everything
once the jobs are done.  Loopback only; nothing is left running.
:class:`AgentQuickStart` is the same with one ``dmlsched agent`` process a
machine instead (as on machines that are other hosts).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from dmlsched.service.loadtest import ServiceProcess, write_secret
from dmlsched.service.states import FINISHED

__all__ = ["MACHINE", "AgentQuickStart", "QuickStart", "job_body", "main"]

MACHINE = (1.0, 4.0, 8.0, 8.0)  # the testbed's machine (dmlsched.testbed.workload)
PROCESS = [0.0, 1.0, 1.0, 1.0]


def job_body(i: int, epochs: int = 2) -> dict[str, Any]:
    """A testbed-sized job: digits MLP, K = 1,437, F = 64, E epochs, a deadline."""
    return {
        "name": f"digits-{i}",
        "epochs": epochs,
        "samples": 1437,
        "batch": 64,
        "grad_mb": 0.07,
        "tau": 1e-5,
        "gamma": 1.0,
        "worker_demand": PROCESS,
        "ps_demand": PROCESS,
        "b_ext": 0.02,
        "b_int": 0.2,
        "deadline": 20,
    }


class QuickStart:
    """The service (its executor embedded) as a subprocess in ``workdir``; ``stop`` stops it."""

    SLOT_SECONDS = 2.0
    EPOCHS = 2
    DRAINS_FROM_START = True  # its service's stderr read from the start (service.log)

    def __init__(
        self,
        workdir: Path,
        *,
        machines: int = 3,
        slot_seconds: float = 2.0,
        scheduler: str = "fifo",
        params: tuple[str, ...] = ("max_workers=2",),
        agent_timeout: float = 20.0,
    ) -> None:
        self.workdir = workdir
        self.machines = [f"m{h}" for h in range(machines)]
        # identities: an admin (declares the machines), a user (submits), one agent a machine
        self.admin_token = secrets.token_urlsafe(24)
        self.user_token = secrets.token_urlsafe(24)
        self.agent_tokens = {m: secrets.token_urlsafe(24) for m in self.machines}
        users = (
            (self.user_token, "quickstart", "user"),
            *((t, f"agent-{m}", "agent", m) for m, t in self.agent_tokens.items()),
        )
        args = [
            "--scheduler",
            scheduler,
            "--db",
            str(workdir / "service.db"),
            "--slot-seconds",
            str(slot_seconds),
            "--progress",
            "measured",
            "--agent-timeout",
            str(agent_timeout),
        ]
        for p in params:
            args += ["--param", p]
        self.service = ServiceProcess(args, workdir, token=self.admin_token, identities=users)
        self.agents: list[subprocess.Popen] = []
        self.work = workdir / "work"

    @property
    def dashboard(self) -> str:
        """The dashboard's URL, carrying the user's token (the page keeps it, not the URL)."""
        return f"{self.service.url}/#token={self.user_token}"

    def start(self) -> None:
        # the executor acts as each machine's agent, with that agent's own token
        tokens = write_secret(
            self.workdir / "executor-tokens.csv",
            "".join(f"{t},agent-{m},agent,{m}\n" for m, t in self.agent_tokens.items()),
        )
        self.service.cmd += [*self.executor_args(), "--workdir", str(self.work)]
        self.service.cmd += ["--executor-token-file", str(tokens)]
        self.service.start()
        _drain(self)  # the executor's log lines (machines, refusals): service.log
        self.declare()
        self.wait_machines()

    def executor_args(self) -> list[str]:
        """``dmlsched serve``'s executor options: this host runs the machines' jobs."""
        caps = ",".join(f"{x:g}" for x in MACHINE)
        return ["--executor", "local", *(f"--machine={m}={caps}" for m in self.machines)]

    def declare(self) -> None:
        """An admin declares each machine; its agent (or the executor) joins it."""
        for name in self.machines:
            httpx.post(
                self.service.url + "/v1/machines",
                json={"name": name, "capacity": list(MACHINE), "agent": True},
                headers=self.service.headers(),
                timeout=60,
            ).raise_for_status()

    def wait_machines(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ms = httpx.get(
                self.service.url + "/v1/machines", headers=self.service.headers(), timeout=60
            ).json()
            if len([m for m in ms if m["up"]]) == len(self.machines):
                return
            for a in self.agents:
                if a.poll() is not None:
                    raise RuntimeError(f"an agent exited with {a.returncode}: see {self.workdir}")
            time.sleep(0.2)
        raise TimeoutError("machines did not register within 120 s")

    def job(self, i: int, epochs: int) -> dict[str, Any]:
        """The i-th job the quick start submits."""
        return job_body(i, epochs)

    def report(self) -> None:
        """What to print once the jobs are done, beyond their states."""

    def submit(self, body: dict[str, Any]) -> int:
        r = httpx.post(
            self.service.url + "/v1/jobs",
            json=body,
            headers=self.service.headers(self.user_token),
            timeout=60,
        )
        r.raise_for_status()
        return int(r.json()["id"])

    def wait(self, ids: list[int], timeout: float) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            h = self.service.headers(self.user_token)
            jobs = [
                httpx.get(f"{self.service.url}/v1/jobs/{j}", headers=h, timeout=60).json()
                for j in ids
            ]
            if all(j["state"] in FINISHED for j in jobs):
                return jobs
            if time.monotonic() > deadline:
                raise TimeoutError(
                    "jobs not done: " + ", ".join(f"{j['id']}={j['state']}" for j in jobs)
                )
            time.sleep(0.5)

    def stop(self) -> None:
        self.service.stop(timeout=60.0)  # the executor stops (checkpoints) every run


class AgentQuickStart(QuickStart):
    """The service and one ``dmlsched agent`` a machine, as subprocesses in ``workdir``."""

    DRAINS_FROM_START = False

    def start(self) -> None:
        self.service.start()
        self.declare()
        self.start_agents()
        self.wait_machines()

    def start_agents(self) -> None:
        env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        for name in self.machines:
            token_file = write_secret(self.workdir / f"agent-{name}.token", self.agent_tokens[name])
            log = (self.workdir / f"agent-{name}.log").open("w")
            self.agents.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "dmlsched",
                        "agent",
                        "--server",
                        self.service.url,
                        "--machine",
                        name,
                        "--token-file",
                        str(token_file),
                        "--workdir",
                        str(self.work),
                        "--poll",
                        "0.3",
                    ],
                    cwd=self.workdir,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    start_new_session=True,
                )
            )

    def stop(self) -> None:
        for a in self.agents:  # SIGTERM: agents checkpoint and stop their processes
            if a.poll() is None:
                os.killpg(a.pid, signal.SIGTERM)
        for a in self.agents:
            try:
                a.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(a.pid, signal.SIGKILL)
                a.wait()
        self.agents = []
        self.service.stop()


def _stopped(qs: QuickStart) -> str | None:
    """Why the service or an agent is no longer running; None while all run."""
    proc = qs.service.proc
    if proc is not None and proc.poll() is not None:
        return f"the service exited with status {proc.returncode}"
    for name, agent in zip(qs.machines, qs.agents, strict=False):
        if agent.poll() is not None:
            return f"agent {name} exited with status {agent.returncode}"
    return None


def _drain(qs: QuickStart) -> None:
    """Copy the service's stderr to service.log, so a long-lived service never blocks
    on a full pipe."""
    proc = qs.service.proc
    if proc is None or proc.stderr is None:
        return
    stream, log = proc.stderr, (qs.workdir / "service.log").open("ab")

    def copy() -> None:
        try:
            for line in iter(stream.readline, b""):
                log.write(line)
        except (OSError, ValueError):  # the pipe closed by stop()
            pass
        finally:
            log.close()

    threading.Thread(target=copy, name="service-log", daemon=True).start()


def main(
    argv: list[str] | None = None, kind: type[QuickStart] | None = None, about: str = __doc__
) -> int:
    """The quick start of ``kind`` (default: :class:`QuickStart`, agents on this host)."""
    cls = kind or QuickStart
    ap = argparse.ArgumentParser(description=about.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=cls.EPOCHS)
    ap.add_argument("--slot-seconds", type=float, default=cls.SLOT_SECONDS)
    ap.add_argument(
        "--exit", action="store_true", help="stop once the jobs are done (default: until Ctrl-C)"
    )
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="dmlsched-quickstart-") as tmp:
        qs = cls(Path(tmp), slot_seconds=a.slot_seconds)
        try:
            qs.start()
            print(f"service: {qs.dashboard}  (dashboard)  machines: {', '.join(qs.machines)}")
            ids = [qs.submit(qs.job(i, a.epochs)) for i in range(a.jobs)]
            print(f"submitted jobs {ids}; waiting for real training to finish …")
            t0 = time.monotonic()
            jobs = qs.wait(ids, timeout=900)
            for j in jobs:
                print(
                    f"job {j['id']} {j['name']}: {j['state']}, arrived slot {j['arrival']}, "
                    f"completed slot {j['completed']}, loss {j['loss']}"
                )
            print(f"all done in {time.monotonic() - t0:.1f} s")
            qs.report()
            print(json.dumps(httpx.get(qs.service.url + "/healthz").json()))
            if a.exit:
                return 0
            if not qs.DRAINS_FROM_START:
                _drain(qs)
            print(
                f"the service stays up: dashboard at {qs.dashboard} — Ctrl-C stops it "
                "and the agents",
                flush=True,
            )
            while (why := _stopped(qs)) is None:
                time.sleep(1.0)
            print(f"quickstart: {why}; stopping the rest", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print("quickstart: Ctrl-C: stopping the service and its agents", file=sys.stderr)
            return 130
        finally:
            qs.stop()


if __name__ == "__main__":
    sys.exit(main())
