"""The training job itself: PS shards and workers of a small PyTorch model.

The model is an MLP (64 → ``hidden`` → 10, ReLU) on scikit-learn's bundled
``digits`` (1,797 8×8 images; the first 1,437 in a fixed seeded order train,
the rest test) — small enough for 2 shared cores, large enough
(``hidden = 256``: 19,210 parameters, 77 KB) that moving gradients over a
capped link dominates a step, as Fact 1 needs.  PyTorch computes losses and
gradients; the PSs hold the flat parameter vector split into contiguous
shards (numpy float32) and apply plain SGD (no optimizer state, so a
checkpoint is the parameters and the work done).

**Sync (BSP, PD-ORS Eq. (1)).** A step trains a fixed global batch F split
across the W workers (local batches differ by at most one sample); the
sample stream is a seeded permutation per epoch, and worker i takes its
contiguous part of step s's F samples — so the trajectory does not depend on
W or on how often the job was resized.  Each worker pushes its summed
gradient's shard k to PS k and waits for every PS's updated shard; PS k
averages the W pushes (÷ F) and replies.  Work is counted in samples.

**Async (thesis Async-SGD).** Each worker trains its own random mini-batches
of F samples: push a gradient, get that PS's updated shard back, go on.  PSs
apply each push at once (÷ F).  Work is counted in mini-batches (PS 0's
update count).

**Stopping.** A PS stops after the step in which it (a) reached the target
work, (b) got SIGTERM (preemption, move, resize) or (c) lost a worker.  It
answers the step with a STOP frame, writes its shard and the work done into
the incarnation's checkpoint folder and exits; workers exit on STOP or when
a PS goes away.  In sync mode every PS has applied the same steps when the
first STOP goes out, so the shards of one checkpoint are consistent.  A new
incarnation (any placement) loads all shards of the previous one and takes
its own slice.

Files of a job (``job_dir``): ``inc-N/ps-K.addr`` (where PS K listens),
``inc-N/ps-K.json`` / ``worker-K.json`` (status: work, bytes, loss sums,
communication and compute seconds, done time), ``inc-N/ckpt/shard-K.npy`` +
``.json`` (periodic ones in ``inc-N/ckpt-<step>/``, see ``TaskConfig.extra``)
and ``loss.csv`` (time, work, mean loss — appended by PS 0).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dmlsched.testbed.shaping import TokenBuckets
from dmlsched.testbed.transport import Channel, Kind, connect, listen

__all__ = [
    "FLAG_DONE",
    "FLAG_STOP",
    "Dataset",
    "TaskConfig",
    "load_digits_split",
    "mover_recv_main",
    "mover_send_main",
    "n_params",
    "ps_main",
    "worker_main",
]

FLAG_STOP = 1
FLAG_DONE = 2
_STATUS_EVERY_S = 0.2
_PEER_TIMEOUT_S = 120.0  # a pod's DNS name resolves only once its PS is scheduled
_TRAIN = 1437


@dataclass(frozen=True)
class Dataset:
    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray


def load_digits_split(seed: int = 0) -> Dataset:
    """scikit-learn's bundled digits (no download), scaled to [0, 1], seeded split."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype(np.float32)
    y = d.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(x))
    tr, te = order[:_TRAIN], order[_TRAIN:]
    return Dataset(x[tr], y[tr], x[te], y[te])


def n_params(hidden: int, n_in: int = 64, n_out: int = 10) -> int:
    """Parameters of the MLP (weights and biases of both layers)."""
    return n_in * hidden + hidden + hidden * n_out + n_out


@dataclass(frozen=True)
class TaskConfig:
    """Everything one PS or worker process needs (JSON-able: it crosses the agent pipe).

    ``ps_machines`` / ``worker_machines``: the machine of each PS / worker;
    ``hosts[h]``: the address PSs on machine h advertise to other machines;
    ``buckets``: the run's token-bucket file (``local`` mode) or ``""``;
    ``delay_ms[h]``: application-level latency added to every message that
    crosses machine h's external link.  ``extra``: ``port`` — the port a PS
    listens on (0: any, advertised in ``ps-K.addr``); ``ps_addrs`` —
    ``host:port`` of every PS, for processes that share no folder (pods);
    ``ckpt_every`` — sync mode: every PS also saves its shard every that many
    steps into ``inc-N/ckpt-<step>/`` (the two newest kept), so a lost
    machine costs at most that many steps.
    """

    job_dir: str
    job: int
    inc: int
    role: str  # "ps" | "worker"
    index: int
    mode: str  # "sync" | "async"
    hidden: int
    lr: float
    batch: int  # F
    seed: int
    target: float  # total work (samples or mini-batches) at which the job is done
    ps_machines: tuple[int, ...]
    worker_machines: tuple[int, ...]
    hosts: tuple[str, ...]
    resume: str = ""  # checkpoint folder of the previous incarnation
    buckets: str = ""
    delay_ms: tuple[float, ...] = ()
    bind: str = "127.0.0.1"
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)

    @staticmethod
    def from_json(d: dict) -> TaskConfig:
        d = dict(d)
        for k in ("ps_machines", "worker_machines", "hosts", "delay_ms"):
            d[k] = tuple(d.get(k, ()))
        return TaskConfig(**d)

    @property
    def inc_dir(self) -> Path:
        return Path(self.job_dir) / f"inc-{self.inc}"

    @property
    def machine(self) -> int:
        return (self.ps_machines if self.role == "ps" else self.worker_machines)[self.index]


def _write_json(path: Path, obj: dict) -> None:
    tmp = path.with_suffix(path.suffix + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(obj))
    os.replace(tmp, path)


def _bounds(p: int, shards: int) -> list[tuple[int, int]]:
    cuts = np.linspace(0, p, shards + 1).round().astype(int)
    return [(int(cuts[k]), int(cuts[k + 1])) for k in range(shards)]


def _model(hidden: int):
    import torch

    return torch.nn.Sequential(
        torch.nn.Linear(64, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 10)
    )


def _init_vector(hidden: int, seed: int) -> np.ndarray:
    import torch
    from torch.nn.utils import parameters_to_vector

    torch.manual_seed(seed)
    with torch.no_grad():
        return parameters_to_vector(_model(hidden).parameters()).numpy().astype(np.float32)


def _load_resume(folder: str, p: int) -> tuple[np.ndarray, float, int] | None:
    """Full vector, work done and step from a checkpoint folder (None if incomplete)."""
    d = Path(folder)
    metas = [json.loads(f.read_text()) for f in sorted(d.glob("shard-*.json"))]
    if not metas or metas[0]["shards"] != len(metas):
        return None
    vec = np.empty(p, dtype=np.float32)
    for m in metas:
        vec[m["lo"] : m["hi"]] = np.load(d / f"shard-{m['index']}.npy")
    ps0 = next(m for m in metas if m["index"] == 0)
    return vec, float(ps0["work"]), int(ps0["step"])


def _channel(cfg: TaskConfig, sock: socket.socket, src: int, dst: int) -> Channel:
    buckets = TokenBuckets(cfg.buckets) if cfg.buckets else None
    if src == dst:  # the machine's loopback (uncapped unless the run caps it)
        return Channel(sock, buckets, (3 * src + 2,) if buckets else ())
    ids = (3 * src, 3 * dst + 1) if buckets else ()
    delay = 0.0
    if cfg.delay_ms:
        delay = (cfg.delay_ms[src] + cfg.delay_ms[dst]) / 1000.0
    return Channel(sock, buckets, ids, delay)


class _Stop:
    """SIGTERM → stop after the current step (installed in PS processes)."""

    def __init__(self) -> None:
        self.flag = False
        signal.signal(signal.SIGTERM, self._on)

    def _on(self, *_: object) -> None:
        self.flag = True


def ps_main(cfg: TaskConfig, data: Dataset) -> None:
    """Serve shard ``cfg.index`` until done, stopped or a worker is lost (module docstring)."""
    stop = _Stop()
    p = n_params(cfg.hidden)
    n_ps, n_w = len(cfg.ps_machines), len(cfg.worker_machines)
    lo, hi = _bounds(p, n_ps)[cfg.index]
    got = _load_resume(cfg.resume, p) if cfg.resume else None
    every = int(cfg.extra.get("ckpt_every", 0)) if cfg.mode == "sync" else 0
    vec, work, step = got if got else (_init_vector(cfg.hidden, cfg.seed), 0.0, 0)
    shard = vec[lo:hi].copy()
    inc = cfg.inc_dir
    srv = listen(cfg.bind, n_w, int(cfg.extra.get("port", 0)))
    _write_json(inc / f"ps-{cfg.index}.addr", {"port": srv.getsockname()[1]})
    by_worker: dict[int, Channel] = {}
    srv.settimeout(60.0)
    for _ in range(n_w):
        sock, _addr = srv.accept()
        sock.settimeout(None)
        ch = Channel(sock)
        w = ch.recv().shard  # HELLO carries the worker index
        by_worker[w] = _channel(cfg, sock, cfg.machine, cfg.worker_machines[w])
        by_worker[w].bytes_in = ch.bytes_in
    srv.close()
    # a fixed order (worker index) keeps the summed loss deterministic
    chans = [by_worker[w] for w in sorted(by_worker)]

    status_path = inc / f"ps-{cfg.index}.json"
    loss_log = Path(cfg.job_dir) / "loss.csv" if cfg.index == 0 else None
    st: dict[str, Any] = {  # the status file's JSON object
        "work": work,
        "step": step,
        "loss_sum": 0.0,
        "loss_n": 0,
        "done": False,
        "done_time": None,
    }
    last_status = 0.0
    log_loss, log_n = 0.0, 0
    grad = np.zeros(hi - lo, dtype=np.float32)
    bufs = [np.empty(hi - lo, dtype=np.float32) for _ in chans]

    def status(final: bool = False) -> None:
        nonlocal last_status
        now = time.time()
        if final or now - last_status >= _STATUS_EVERY_S:
            st["bytes_in"] = sum(c.bytes_in for c in chans)
            st["bytes_out"] = sum(c.bytes_out for c in chans)
            st["pace_lag_s"] = sum(c.lag_s for c in chans)
            st["pace_lag_n"] = sum(c.lag_n for c in chans)
            st["time"] = now
            st["final"] = final
            _write_json(status_path, st)
            last_status = now

    def log(force: bool = False) -> None:
        nonlocal log_loss, log_n
        if loss_log is not None and log_n and (force or log_n >= 10):
            with loss_log.open("a") as f:
                f.write(f"{time.time():.3f},{st['work']:.0f},{log_loss / log_n:.6f}\n")
            log_loss, log_n = 0.0, 0

    try:
        if cfg.mode == "sync":
            for c in chans:  # initial pull
                c.recv()
                c.send(Kind.PARAMS, payload=shard, step=step)
            while True:
                grad[:] = 0.0
                loss = 0.0
                for c, b in zip(chans, bufs, strict=True):
                    f = c.recv(b)
                    grad += b
                    loss += f.loss
                shard -= np.float32(cfg.lr / cfg.batch) * grad
                step += 1
                st["work"] = work = work + cfg.batch
                st["step"] = step
                st["loss_sum"] += loss / cfg.batch
                st["loss_n"] += 1
                log_loss, log_n = log_loss + loss / cfg.batch, log_n + 1
                done = work >= cfg.target - 1e-9
                if done and st["done_time"] is None:
                    st["done_time"] = time.time()
                    st["done"] = True
                flags = FLAG_DONE if done else FLAG_STOP if stop.flag else 0
                for c in chans:
                    c.send(Kind.PARAMS, payload=shard, step=step, flags=flags)
                status()
                log()
                if flags:
                    break
                if every and step % every == 0:  # every PS saves the same step: consistent
                    _save_shard(inc / f"ckpt-{step}", cfg.index, shard, n_ps, lo, hi, work, step)
                    _drop_shard(inc / f"ckpt-{step - 2 * every}", cfg.index)
        else:
            live = {c.sock.fileno(): (c, b) for c, b in zip(chans, bufs, strict=True)}
            while live:
                ready, _, _ = select.select(list(live), [], [], 0.5)
                for fd in ready:
                    c, b = live[fd]
                    try:
                        f = c.recv(b)
                    except (ConnectionError, OSError):
                        del live[fd]
                        continue
                    flags = 0
                    if f.kind == Kind.PUSH:
                        shard -= np.float32(cfg.lr / max(f.nsamples, 1)) * b
                        step += 1
                        if cfg.index == 0:
                            st["work"] = work = work + 1
                            st["loss_sum"] += f.loss / max(f.nsamples, 1)
                            st["loss_n"] += 1
                            log_loss, log_n = log_loss + f.loss / max(f.nsamples, 1), log_n + 1
                        st["step"] = step
                    done = cfg.index == 0 and work >= cfg.target - 1e-9
                    if done and st["done_time"] is None:
                        st["done_time"] = time.time()
                        st["done"] = True
                    if done or st["done"]:
                        flags = FLAG_DONE
                    elif stop.flag:
                        flags = FLAG_STOP
                    c.send(Kind.PARAMS, payload=shard, step=step, flags=flags)
                    if flags:
                        del live[fd]
                status()
                log()
                if stop.flag and not ready:
                    # idle workers (none pushing) still get their STOP on the next pull
                    pass
    except (ConnectionError, OSError):
        pass  # a worker went away: checkpoint what was applied
    _save_shard(inc / "ckpt", cfg.index, shard, n_ps, lo, hi, work, step)
    log(force=True)
    status(final=True)
    for c in chans:
        c.close()


def _save_shard(
    folder: Path,
    index: int,
    shard: np.ndarray,
    shards: int,
    lo: int,
    hi: int,
    work: float,
    step: int,
) -> None:
    """Shard ``index`` of a checkpoint; its ``.json`` (written last, atomically) marks it whole."""
    folder.mkdir(exist_ok=True)
    tmp = folder / f"shard-{index}.{os.getpid()}.tmp.npy"
    np.save(tmp, shard)
    os.replace(tmp, folder / f"shard-{index}.npy")
    meta = {"index": index, "shards": shards, "lo": lo, "hi": hi, "work": work, "step": step}
    _write_json(folder / f"shard-{index}.json", meta)


def _drop_shard(folder: Path, index: int) -> None:
    for suffix in (".json", ".npy"):  # the marker first: a reader never sees half a shard
        (folder / f"shard-{index}{suffix}").unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()  # the last PS to leave removes the folder


def _worker_indices(cfg: TaskConfig, step: int, n_train: int, perms: dict) -> np.ndarray:
    """Sample ids worker ``cfg.index`` trains in sync step ``step`` (module docstring)."""
    n_w, f = len(cfg.worker_machines), cfg.batch
    sizes = [f // n_w + (1 if i < f % n_w else 0) for i in range(n_w)]
    start = sum(sizes[: cfg.index])
    g = step * f + start + np.arange(sizes[cfg.index])
    ep, pos = g // n_train, g % n_train
    out = np.empty(len(g), dtype=np.int64)
    for e in np.unique(ep):
        if e not in perms:
            perms.clear()  # keep one or two epochs' permutations
            perms[e] = np.random.default_rng([cfg.seed, int(e)]).permutation(n_train)
        m = ep == e
        out[m] = perms[e][pos[m]]
    return out


def worker_main(cfg: TaskConfig, data: Dataset) -> None:
    """Train until a PS says STOP/DONE or goes away (module docstring)."""
    import torch
    from torch.nn.utils import parameters_to_vector, vector_to_parameters

    p = n_params(cfg.hidden)
    bounds = _bounds(p, len(cfg.ps_machines))
    inc = cfg.inc_dir
    chans: list[Channel] = []
    peers = cfg.extra.get("ps_addrs") or ()
    for k, m in enumerate(cfg.ps_machines):
        if peers:  # fixed addresses (a container cluster's DNS names), no shared folder
            host, _, port_text = str(peers[k]).rpartition(":")
            sock = connect(host, int(port_text), timeout_s=_PEER_TIMEOUT_S)
        else:
            addr = inc / f"ps-{k}.addr"
            deadline = time.monotonic() + 60.0
            while not addr.exists():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no {addr}")
                time.sleep(0.02)
            port = json.loads(addr.read_text())["port"]
            host = "127.0.0.1" if m == cfg.machine else cfg.hosts[m]
            sock = connect(host, port)
        ch = _channel(cfg, sock, cfg.machine, m)
        ch.send(Kind.HELLO, shard=cfg.index)
        chans.append(ch)
    model = _model(cfg.hidden)
    loss_fn = torch.nn.CrossEntropyLoss(reduction="sum")
    vec = np.empty(p, dtype=np.float32)
    x_all = torch.from_numpy(data.x_train)
    y_all = torch.from_numpy(data.y_train)
    n_train = len(data.y_train)
    perms: dict = {}
    rng = np.random.default_rng([cfg.seed, cfg.inc, cfg.index])
    compute_s = 0.0
    steps = 0
    flags = 0
    step = 0
    status_path = inc / f"worker-{cfg.index}.json"
    last = 0.0

    def status(final: bool = False, acc: float | None = None) -> None:
        nonlocal last
        now = time.time()
        if final or now - last >= 1.0:
            _write_json(
                status_path,
                {
                    "steps": steps,
                    "compute_s": compute_s,
                    "comm_s": sum(c.comm_s for c in chans),
                    "bytes_out": sum(c.bytes_out for c in chans),
                    "bytes_in": sum(c.bytes_in for c in chans),
                    "accuracy": acc,
                    "time": now,
                    "final": final,
                },
            )
            last = now

    try:
        for k, c in enumerate(chans):
            c.send(Kind.PULL)
            fr = c.recv(vec[bounds[k][0] : bounds[k][1]])
            step = fr.step
        while True:
            t0 = time.perf_counter()
            if cfg.mode == "sync":
                idx = _worker_indices(cfg, step, n_train, perms)
            else:
                idx = rng.integers(0, n_train, size=cfg.batch)
            with torch.no_grad():
                vector_to_parameters(torch.from_numpy(vec), model.parameters())
            model.zero_grad(set_to_none=False)
            xb, yb = x_all[idx], y_all[idx]
            loss = loss_fn(model(xb), yb)
            loss.backward()
            g = parameters_to_vector(p_.grad for p_ in model.parameters()).numpy()
            compute_s += time.perf_counter() - t0
            for k, c in enumerate(chans):
                lo, hi = bounds[k]
                c.send(
                    Kind.PUSH,
                    payload=g[lo:hi],
                    step=step,
                    loss=float(loss.detach()),
                    nsamples=len(idx),
                )
            for k, c in enumerate(chans):
                fr = c.recv(vec[bounds[k][0] : bounds[k][1]])
                step = max(step, fr.step) if cfg.mode == "async" else fr.step
                flags |= fr.flags
            steps += 1
            status()
            if flags:
                break
    except (ConnectionError, OSError):
        pass
    acc = None
    if flags & FLAG_DONE and cfg.index == 0:
        with torch.no_grad():
            vector_to_parameters(torch.from_numpy(vec), model.parameters())
            pred = model(torch.from_numpy(data.x_test)).argmax(1).numpy()
        acc = float((pred == data.y_test).mean())
    status(final=True, acc=acc)
    for c in chans:
        c.close()


def mover_recv_main(cfg: TaskConfig, data: Dataset) -> None:
    """Receive one bulk transfer (a data move between machines) and report its bytes.

    ``cfg.index`` names the transfer; the sender's machine is
    ``cfg.worker_machines[0]``, this one ``cfg.ps_machines[0]``.
    """
    del data
    srv = listen(cfg.bind, 1)
    srv.settimeout(60.0)
    inc = cfg.inc_dir
    _write_json(inc / f"recv-{cfg.index}.addr", {"port": srv.getsockname()[1]})
    sock, _ = srv.accept()
    srv.close()
    t0 = time.time()
    got = 0
    buf = bytearray(1 << 16)
    while True:
        n = sock.recv_into(buf)
        if n == 0:
            break
        got += n
    sock.close()
    _write_json(inc / f"recv-{cfg.index}.json", {"bytes": got, "seconds": time.time() - t0})


def mover_send_main(cfg: TaskConfig, data: Dataset) -> None:
    """Send ``cfg.extra["nbytes"]`` to the matching receiver over the shaped link."""
    del data
    inc = cfg.inc_dir
    addr = inc / f"recv-{cfg.index}.addr"
    deadline = time.monotonic() + 60.0
    while not addr.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {addr}")
        time.sleep(0.02)
    dst = cfg.ps_machines[0]
    src = cfg.worker_machines[0]
    host = "127.0.0.1" if dst == src else cfg.hosts[dst]
    sock = connect(host, json.loads(addr.read_text())["port"])
    ch = _channel(cfg, sock, src, dst)
    left = int(cfg.extra["nbytes"])
    chunk = np.zeros(16384, dtype=np.float32)  # 64 KB
    while left > 0:
        part = chunk[: max(1, min(len(chunk), left // 4))]
        ch.send(Kind.PUSH, payload=part)
        left -= part.nbytes
    ch.close()
