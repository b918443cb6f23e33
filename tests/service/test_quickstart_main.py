"""`make quickstart` keeps the service up until Ctrl-C, and says so when it (or an
agent) stops instead; --exit stops once the jobs are done."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dmlsched.service import quickstart


class _Proc:
    def __init__(self, code: int | None = None) -> None:
        self.code = code
        self.returncode = code
        self.stderr = None

    def poll(self) -> int | None:
        return self.code


class _Service:
    url = "http://127.0.0.1:1"

    def __init__(self) -> None:
        self.proc = _Proc()


class _FakeQuickStart:
    """The real class's surface, with processes that the test ends."""

    last: _FakeQuickStart | None = None
    SLOT_SECONDS = 2.0
    EPOCHS = 2
    DRAINS_FROM_START = False

    def __init__(self, workdir: Path, **kw: Any) -> None:
        self.workdir = workdir
        self.machines = ["m0", "m1"]
        self.agents = [_Proc(), _Proc()]
        self.service = _Service()
        self.stopped = False
        self.dashboard = f"{self.service.url}/#token=t"
        _FakeQuickStart.last = self

    def start(self) -> None:
        pass

    def job(self, i: int, epochs: int) -> dict[str, Any]:
        return {"i": i, "epochs": epochs}

    def report(self) -> None:
        pass

    def submit(self, body: dict[str, Any]) -> int:
        return 1

    def wait(self, ids: list[int], timeout: float) -> list[dict[str, Any]]:
        return [
            {"id": 1, "name": "d", "state": "completed", "arrival": 0, "completed": 3, "loss": 0.1}
        ]

    def stop(self) -> None:
        self.stopped = True


class _Health:
    def json(self) -> dict[str, str]:
        return {"status": "ok"}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> type[_FakeQuickStart]:
    monkeypatch.setattr(quickstart, "QuickStart", _FakeQuickStart)
    monkeypatch.setattr(quickstart.httpx, "get", lambda *a, **k: _Health())
    return _FakeQuickStart


def test_the_service_stays_up_until_it_stops_and_that_is_said(
    fake: type[_FakeQuickStart], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    naps = []

    def nap(seconds: float) -> None:  # the service dies during the third second up
        naps.append(seconds)
        if len(naps) == 3 and fake.last is not None:
            fake.last.service.proc.code = fake.last.service.proc.returncode = -9

    monkeypatch.setattr(quickstart.time, "sleep", nap)
    assert quickstart.main(["--jobs", "1"]) == 1
    out, err = capsys.readouterr()
    assert "the service stays up" in out and "Ctrl-C" in out
    assert "the service exited with status -9; stopping the rest" in err
    assert len(naps) == 3 and fake.last is not None and fake.last.stopped


def test_ctrl_c_stops_everything_with_130(
    fake: type[_FakeQuickStart], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    def interrupt(seconds: float) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(quickstart.time, "sleep", interrupt)
    assert quickstart.main(["--jobs", "1"]) == 130
    assert "stopping the service and its agents" in capsys.readouterr().err
    assert fake.last is not None and fake.last.stopped


def test_exit_stops_once_the_jobs_are_done(
    fake: type[_FakeQuickStart], capsys: pytest.CaptureFixture
) -> None:
    assert quickstart.main(["--jobs", "1", "--exit"]) == 0
    assert "stays up" not in capsys.readouterr().out
    assert fake.last is not None and fake.last.stopped


def test_the_service_log_is_drained_so_a_long_lived_service_never_blocks(tmp_path: Path) -> None:
    qs = _FakeQuickStart(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stderr.write('x' * 200000)"],
        stderr=subprocess.PIPE,
    )
    qs.service.proc = proc  # type: ignore[assignment]  # a real pipe in the fake's place
    quickstart._drain(qs)  # type: ignore[arg-type]  # the fake has the surface it reads
    assert proc.wait(timeout=30) == 0  # 200 kB through a 64 kB pipe: someone read it
