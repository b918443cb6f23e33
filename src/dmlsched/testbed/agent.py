"""The per-machine agent: one process per emulated machine that forks PSs and workers.

Started by :class:`dmlsched.testbed.runtime.Testbed` (inside the machine's
network namespace in ``netns`` mode, so its children are too).  It imports
PyTorch and loads the dataset once, then forks a child per request — a
PS or worker starts in milliseconds instead of the seconds an interpreter
with PyTorch takes, which keeps a preemption or a move cheap.

Protocol: one JSON object per line on stdin, one reply per line on stdout.

* ``{"op": "spawn", "cfg": TaskConfig.to_json()}`` → ``{"ok": true, "pid": P}``
* ``{"op": "ping"}`` → ``{"ok": true, "pid": agent pid, "machine": h}``
* ``{"op": "exit"}`` or end of stdin → SIGKILL every child still alive, exit.

Children are reaped automatically (SIGCHLD ignored) and die with the agent
(``PR_SET_PDEATHSIG``); the agent dies with the run's controller because its
stdin closes.  The run id is on the agent's (and so every child's) command
line, which is how ``dmlsched testbed cleanup`` recognises them.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import signal
import sys
import traceback
from pathlib import Path

__all__ = ["main"]

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:  # not Linux/glibc: the agent's exit handler still kills children
        pass


def _child(cfg_json: dict, data: object) -> int:
    from dmlsched.testbed.training import (
        TaskConfig,
        mover_recv_main,
        mover_send_main,
        ps_main,
        worker_main,
    )

    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the controller only
    _die_with_parent()
    cfg = TaskConfig.from_json(cfg_json)
    log = cfg.inc_dir / f"{cfg.role}-{cfg.index}.log"
    try:
        import torch

        torch.set_num_threads(1)
        mains = {
            "ps": ps_main,
            "worker": worker_main,
            "recv": mover_recv_main,
            "send": mover_send_main,
        }
        mains[cfg.role](cfg, data)  # type: ignore[arg-type]  # each role's main takes its own config type
        return 0
    except BaseException:
        log.write_text(traceback.format_exc())
        return 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="dmlsched-testbed-agent")
    ap.add_argument("--run-id", required=True)
    ap.add_argument("--machine", type=int, required=True)
    ap.add_argument("--data-seed", type=int, default=0)
    args = ap.parse_args(argv)
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import torch

    torch.set_num_threads(1)
    from dmlsched.testbed.training import load_digits_split

    data = load_digits_split(args.data_seed)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # auto-reap
    children: set[int] = set()
    out = sys.stdout

    def reply(obj: dict) -> None:
        out.write(json.dumps(obj) + "\n")
        out.flush()

    reply({"ok": True, "ready": True, "pid": os.getpid(), "machine": args.machine})
    try:
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
                op = msg.get("op")
                if op == "spawn":
                    Path(msg["cfg"]["job_dir"], f"inc-{msg['cfg']['inc']}").mkdir(
                        parents=True, exist_ok=True
                    )
                    pid = os.fork()
                    if pid == 0:
                        code = 1
                        try:
                            code = _child(msg["cfg"], data)
                        finally:
                            os._exit(code)
                    children.add(pid)
                    reply({"ok": True, "pid": pid})
                elif op == "ping":
                    reply({"ok": True, "pid": os.getpid(), "machine": args.machine})
                elif op == "exit":
                    break
                else:
                    reply({"ok": False, "error": f"unknown op {op!r}"})
            except Exception as e:  # a bad request must not kill the machine
                reply({"ok": False, "error": f"{type(e).__name__}: {e}"})
    finally:
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return 0


if __name__ == "__main__":
    sys.exit(main())
