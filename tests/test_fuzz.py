"""Fuzzing the inputs a user hands us: the exit status is always 0 or 2, never a traceback.

Job files, trace files, peer files and CLI flags are generated (and mutated
byte by byte) by hypothesis and fed to :func:`dmlsched.cli.main` in-process —
the console script's own code path — with every size kept tiny so an accepted
input runs in milliseconds.  ``derandomize=True``: the same examples on every
machine, so a CI failure reproduces locally.
"""

from __future__ import annotations

import io
import itertools
import json
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmlsched.cli import main
from tests.conftest import PEERS, fuzz

FUZZ = fuzz(30)
_names = itertools.count()


def _fresh(tmp_path: Path, name: str) -> Path:
    """A new path per example (trace loads are cached by path and mtime)."""
    d = tmp_path / f"case{next(_names)}"
    d.mkdir()
    return d / name


def _answers_clearly(args: list[str]) -> int:
    out, err = io.StringIO(), io.StringIO()
    try:
        with redirect_stderr(err), redirect_stdout(out):
            rc = main(args)
    except BaseException as e:  # anything escaping main() would be a traceback
        raise AssertionError(f"{args}: {type(e).__name__}: {e}") from e
    text = err.getvalue()
    assert rc in (0, 2), (args, rc, text)
    assert "Traceback" not in text, text
    if rc == 2:
        assert text.startswith("dmlsched: "), text
    return rc


# ------------------------------------------------------------------ values

_json_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.lists(st.integers(-5, 5), max_size=6),
    st.dictionaries(st.text(max_size=4), st.integers(0, 3), max_size=2),
)
_cells = st.one_of(
    st.sampled_from(["", "0", "1", "-1", "2.5", "1e308", "inf", "nan", "abc", "10**9", "٣"]),
    st.integers(-(10**12), 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=6),
)


@st.composite
def _mutated(draw: st.DrawFn, text: str) -> bytes:
    """``text`` with a few bytes replaced, inserted or deleted, or cut short."""
    data = bytearray(text.encode())
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, max(0, len(data) - 1)))
        op = draw(st.sampled_from(["replace", "insert", "delete", "cut"]))
        b = draw(st.integers(0, 255))
        if op == "replace" and data:
            data[i] = b
        elif op == "insert":
            data.insert(i, b)
        elif op == "delete" and data:
            del data[i]
        elif op == "cut":
            del data[i:]
    if draw(st.booleans()):
        data = bytearray(b"\xef\xbb\xbf") + data
    return bytes(data)


# ------------------------------------------------------------------ job files

JOB = {
    "id": 0,
    "arrival": 0,
    "epochs": 1,
    "samples": 20,
    "batch": 4,
    "grad_mb": 5,
    "tau": 0.001,
    "gamma": 2,
    "worker_demand": [1, 2, 2, 1],
    "ps_demand": [0, 1, 2, 1],
    "b_ext": 1,
}
SPEC = {"slots": 5, "cluster": {"machines": 2}, "jobs": [JOB]}
JOB_CSV = (
    "id,arrival,epochs,samples,batch,grad_mb,tau,gamma,b_ext,worker_gpu,worker_cpu,ps_cpu,"
    "utility,theta1\n0,0,1,20,4,5,0.001,2,1,1,2,1,sigmoid,10\n"
)


@st.composite
def _job_json(draw: st.DrawFn) -> bytes:
    spec = json.loads(json.dumps(SPEC))
    job, cluster = spec["jobs"][0], spec["cluster"]  # kept even if the top level is replaced
    for _ in range(draw(st.integers(1, 3))):
        target = draw(st.sampled_from([job, cluster, spec]))
        key = draw(st.sampled_from([*target.keys(), "extra_field"]))
        if draw(st.booleans()):
            target.pop(key, None)
        else:
            target[key] = draw(_json_values)
    text = json.dumps(spec)  # NaN / Infinity tokens included: a user may write them too
    return draw(st.one_of(st.just(text.encode()), _mutated(text)))


@st.composite
def _job_csv(draw: st.DrawFn) -> bytes:
    header, row = JOB_CSV.strip().split("\n")
    cells = row.split(",")
    for _ in range(draw(st.integers(1, 3))):
        cells[draw(st.integers(0, len(cells) - 1))] = draw(_cells).replace("\n", " ")
    text = f"{header}\n{','.join(cells)}\n"
    return draw(st.one_of(st.just(text.encode()), _mutated(text)))


@FUZZ
@given(
    data=st.one_of(
        _job_json().map(lambda b: ("jobs.json", b)), _job_csv().map(lambda b: ("jobs.csv", b))
    )
)
def test_any_job_file_gets_exit_0_or_2(tmp_path: Path, data: tuple[str, bytes]) -> None:
    name, content = data
    f = _fresh(tmp_path, name)
    f.write_bytes(content)
    _answers_clearly(["run", "--scheduler", "fifo", "--workload", str(f), "--slots", "5"])


# ------------------------------------------------------------------ trace files

PHILLY = "timestamp,duration,num_gpus,gpu_time,cluster\n" + "".join(
    f"2017-10-09 0{i}:00:00,{60 * (i + 1)}.0,{1 + i % 2},{60 * (i + 1) * (1 + i % 2)}.0,c\n"
    for i in range(5)
)
GOOGLE_JOBS = "".join(
    f"{600_000_000 + 10**8 * i + d},,{i},{ev},u,1,n,l\n"
    for i in range(4)
    for d, ev in ((0, 0), (10**6, 1), (9 * 10**7, 4))
)
GOOGLE_TASKS = "".join(
    f"{600_000_010 + k},,{k % 3},{k},,0,u,0,2,0.1,0.1,0.001,0\n" for k in range(5)
)
PODS = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,"
    "creation_time,deletion_time,scheduled_time\n"
    + "".join(
        f"pod-{i},4000,8192,1,1000,,LS,Succeeded,{10022400 + 3600 * i},"
        f"{10022400 + 3600 * i + 1800},{10022400 + 3600 * i + 60}\n"
        for i in range(4)
    )
)
NODES = "sn,cpu_milli,memory_mib,gpu,model\n" + "".join(
    f"n{i},64000,262144,{2 + 2 * i},T4\n" for i in range(3)
)
PAI = ",worker,gpu,time,batch_time_norm\n" + "".join(
    f"{k},{k % 2},25,{1 + k // 2},{500 + 40 * (k % 2)}\n" for k in range(6)
)


def _rows(text: str, sep: str = ",") -> st.SearchStrategy[str]:
    """``text`` with cells of some rows replaced by drawn values."""

    @st.composite
    def build(draw: st.DrawFn) -> str:
        lines = text.splitlines()
        for _ in range(draw(st.integers(1, 3))):
            i = draw(st.integers(0, len(lines) - 1))
            cells = lines[i].split(sep)
            cells[draw(st.integers(0, len(cells) - 1))] = draw(_cells).replace("\n", " ")
            lines[i] = sep.join(cells)
        return "\n".join(lines) + "\n"

    return build()


def _content(text: str) -> st.SearchStrategy[bytes]:
    return st.one_of(_rows(text).map(str.encode), _mutated(text))


@FUZZ
@given(
    kind=st.sampled_from(["philly", "google", "alibaba"]),
    skip=st.booleans(),
    data=st.data(),
)
def test_any_trace_file_gets_exit_0_or_2(
    tmp_path: Path, kind: str, skip: bool, data: st.DataObject
) -> None:
    d = _fresh(tmp_path, "trace")
    d.mkdir()
    files = {
        "philly": {"philly.csv": PHILLY},
        "google": {"job_events.csv": GOOGLE_JOBS, "task_events.csv": GOOGLE_TASKS},
        "alibaba": {"openb_pod_list.csv": PODS, "openb_node_list.csv": NODES},
    }[kind]
    target = data.draw(st.sampled_from(sorted(files)))
    for name, text in files.items():
        (d / name).write_bytes(data.draw(_content(text)) if name == target else text.encode())
    setting, sched = data.draw(
        st.sampled_from(
            {
                "philly": [("cluster", "fifo"), ("edge-cloud", "srtf")],
                "google": [("cluster", "fifo"), ("geo", "local")],
                "alibaba": [("cluster", "fifo")],
            }[kind]
        )
    )
    args = ["run", "--setting", setting, "--scheduler", sched, "--workload", kind]
    args += ["--trace", str(d), "--jobs", "4", "--machines", "3", "--slots", "6"]
    _answers_clearly([*args, "--skip-bad-rows"] if skip else args)


@FUZZ
@given(data=st.data())
def test_any_pai_file_loads_or_is_invalid_input(tmp_path: Path, data: st.DataObject) -> None:
    from dmlsched.errors import InvalidInput
    from dmlsched.workloads.traces import load_trace

    f = _fresh(tmp_path, "job_1_norm.csv")
    f.write_bytes(data.draw(_content(PAI)))
    try:
        t = load_trace("pai", f.parent, skip_bad_rows=data.draw(st.booleans()))
    except InvalidInput:
        return
    assert all(x >= 1.0 for x in t.stragglers)


# ------------------------------------------------------------------ peer files

POLLUX = "name,time,application,num_replicas,batch_size\n" + "".join(
    f"job{i},{30 * i},{app},{1 + i % 2},{64 * (1 + i % 2)}\n"
    for i, app in enumerate(["cifar10", "ncf", "cifar10"])
)
GAVEL = "".join(
    f"ResNet-18 (batch size 32)\tpython x.py\t--num_steps\t0\t{100 * (i + 1)}\t{60 * i}\t{1 + i}\n"
    for i in range(2)
)


@pytest.mark.skipif(not PEERS.is_dir(), reason="../shared/peers absent (peer profiles)")
@FUZZ
@given(kind=st.sampled_from(["pollux", "gavel"]), data=st.data())
def test_any_peer_file_gets_exit_0_or_2(tmp_path: Path, kind: str, data: st.DataObject) -> None:
    text = POLLUX if kind == "pollux" else GAVEL
    content = data.draw(
        st.one_of(_rows(text, "," if kind == "pollux" else "\t").map(str.encode), _mutated(text))
    )
    f = _fresh(tmp_path, "w.csv" if kind == "pollux" else "w.trace")
    f.write_bytes(content)
    args = ["run", "--scheduler", "fifo", "--workload", f"{kind}:{f}", "--machines", "2"]
    _answers_clearly([*args, "--slots", data.draw(st.sampled_from(["40", "1", "0"]))])


# ------------------------------------------------------------------ CLI flags

_SIZES = ["0", "-1", "1", "2", "3", "abc", "1e3", "2.5", "", "inf", "nan", "99999999999999999999"]
_FLAGS: dict[str, list[str]] = {
    "--jobs": _SIZES,
    "--machines": _SIZES,
    "--slots": _SIZES,
    "--seed": ["0", "-1", "7", "x", str(2**64)],
    "--seeds": ["0", "1", "-2", "y"],
    "--workers": ["0", "1", "z"],
    "--setting": ["cluster", "interval", "edge-cloud", "geo", "moon", ""],
    "--workload": ["synthetic", "philly", "google", "alibaba", "nope", "x.json", "pollux:"],
    "--slot-seconds": ["60", "0", "-1", "inf", "nan", "x", "1e-300"],
    "--mode": ["sync", "async", "x"],
    "--format": ["pollux", "gavel", "x"],
    "--trace": ["/nonexistent", "."],
    "--nodes": ["/nonexistent"],
    "--skip-bad-rows": [],
    "--bogus": [],
}
_SCHEDULERS = ["fifo", "drf", "srtf", "smd", "local", "nope", "fifo,,", ""]


@st.composite
def _argv(draw: st.DrawFn, out: Path) -> list[str]:
    cmd = draw(st.sampled_from(["run", "run", "run", "compare", "export", "report", "reproduce"]))
    args = [cmd]
    if cmd == "reproduce":
        return [cmd, draw(st.sampled_from(["no-such-id", "--list", ""])), "--out", str(out)]
    if cmd == "report":
        return [cmd, draw(st.sampled_from([str(out), "/nonexistent", ""]))]
    if cmd == "run":
        args += ["--scheduler", draw(st.sampled_from(_SCHEDULERS))]
    if cmd == "compare":
        args += ["--schedulers", draw(st.sampled_from(_SCHEDULERS)), "--out", str(out)]
        args += ["--seeds", "1", "--workers", "1"]
    if cmd == "export":
        args += [
            "--out",
            str(out.parent / "x.csv"),
            "--workload",
            "synthetic",
            "--format",
            "pollux",
        ]
    # always small sizes first: a flag drawn below may override them (last one wins)
    args += ["--jobs", "3", "--machines", "2", "--slots", "4"]
    for flag in draw(st.lists(st.sampled_from(sorted(_FLAGS)), max_size=4)):
        values = _FLAGS[flag]
        args += [flag, draw(st.sampled_from(values))] if values else [flag]
    return args


@FUZZ
@given(data=st.data())
def test_any_command_line_gets_exit_0_or_2(tmp_path: Path, data: st.DataObject) -> None:
    out = _fresh(tmp_path, "out")
    _answers_clearly(data.draw(_argv(out)))
