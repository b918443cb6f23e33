"""The dashboard in a real headless Chromium (Debian's chromium + chromium-driver).

Skipped with a reason where they are not installed (``make test-deps`` installs them
as root from Debian's registry).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

from dmlsched.service.loadtest import ServiceProcess
from tests.service.helpers import CAPACITY, job_request

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None,
    reason="needs Debian's chromium and chromium-driver (make test-deps, as root)",
)


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[WebDriver]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM  # type: ignore[assignment]
    for flag in (
        "--headless",
        "--no-sandbox",  # we run as root in CI
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        "--window-size=1200,900",
    ):
        opts.add_argument(flag)
    drv = webdriver.Chrome(options=opts, service=DriverService(executable_path=DRIVER))
    try:
        yield drv
    finally:
        drv.quit()


@pytest.fixture
def fifo_service(tmp_path: Path) -> ServiceProcess:
    """A FIFO service on a manual clock with one bearer token ("tok"); not yet started."""
    return ServiceProcess(
        ["--scheduler", "fifo", "--db", str(tmp_path / "s.db"), "--manual-clock"],
        tmp_path,
        token="tok",
    )


def test_the_dashboard_shows_machines_jobs_and_the_allocation(
    tmp_path: Path, fifo_service: ServiceProcess, browser: WebDriver
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with fifo_service as svc:
        h = svc.headers()
        for name in ("alpha", "beta", "gamma"):
            httpx.post(
                svc.url + "/v1/machines", json={"name": name, "capacity": CAPACITY}, headers=h
            ).raise_for_status()
        for i, epochs in enumerate((1, 400, 400)):
            httpx.post(
                svc.url + "/v1/jobs", json=job_request(name=f"train-{i}", epochs=epochs), headers=h
            ).raise_for_status()
        httpx.post(svc.url + "/v1/tick", params={"n": 2}, headers=h).raise_for_status()
        httpx.post(svc.url + "/v1/jobs", json=job_request(name="late"), headers=h)
        expected = {j["id"]: j["state"] for j in httpx.get(svc.url + "/v1/jobs", headers=h).json()}
        alloc = httpx.get(svc.url + "/v1/allocation", headers=h).json()["jobs"]

        drv = browser
        drv.get(svc.url + "/#token=tok")
        WebDriverWait(drv, 20).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "2"
        )
        rows = drv.find_elements(By.CSS_SELECTOR, "#machines tbody tr")
        assert [r.get_attribute("data-machine") for r in rows] == ["alpha", "beta", "gamma"]
        assert all("up" in r.text for r in rows)
        jobs = drv.find_elements(By.CSS_SELECTOR, "#jobs tbody tr")
        seen = {int(r.get_attribute("data-job")): r.get_attribute("data-state") for r in jobs}
        assert seen == expected
        assert seen[0] == "completed" and seen[3] == "queued"
        names = {r.find_element(By.CSS_SELECTOR, "td:nth-child(2)").text for r in jobs}
        assert names == {"train-0", "train-1", "train-2", "late"}
        # the allocation grid: slot 1's cell of each machine lists the jobs placed there
        for row in drv.find_elements(By.CSS_SELECTOR, "#history tbody tr"):
            m = row.get_attribute("data-machine")
            cell = row.find_element(By.CSS_SELECTOR, 'td[data-slot="1"]')
            want = sorted(j for j, per in alloc.items() if m in per)
            assert sorted(filter(None, cell.text.split(","))) == want
        assert "slot 2" in drv.find_element(By.ID, "status").text
        drv.save_screenshot(str(tmp_path / "dashboard.png"))


def test_a_user_sees_reasons_and_times_and_cancels_her_own_job(
    tmp_path: Path, browser: WebDriver
) -> None:
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    svc = ServiceProcess(
        ["--scheduler", "fifo", "--db", str(tmp_path / "s.db"), "--manual-clock",
         "--param", "min_workers=1", "--param", "max_workers=1"],
        tmp_path,
        token="tok",
        identities=(("alice-tok", "alice", "user"), ("bob-tok", "bob", "user")),
    )  # fmt: skip
    with svc:
        h = svc.headers()
        capacity = [8, 64, 256, 400]
        httpx.post(
            svc.url + "/v1/machines", json={"name": "m0", "capacity": capacity}, headers=h
        ).raise_for_status()
        alice, bob = svc.headers("alice-tok"), svc.headers("bob-tok")
        big = job_request(name="big", epochs=400, worker_demand=[8, 2, 4, 5])
        for body, who in [
            (job_request(name="small", epochs=400, worker_demand=[1, 2, 4, 5]), alice),
            (big, alice),
            (job_request(name="bobs"), bob),
        ]:
            httpx.post(svc.url + "/v1/jobs", json=body, headers=who).raise_for_status()
        httpx.post(svc.url + "/v1/tick", headers=h).raise_for_status()

        drv = browser
        drv.get(svc.url + "/")
        WebDriverWait(drv, 20).until(lambda d: d.find_element(By.ID, "login").is_displayed())
        drv.find_element(By.ID, "token").send_keys("alice-tok")
        drv.find_element(By.CSS_SELECTOR, "#login button").click()
        WebDriverWait(drv, 20).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "1"
        )
        assert "alice (user)" in drv.find_element(By.ID, "who").text

        def jobs(d: object) -> dict[int, dict[str, object]]:
            """What the jobs table shows (read at once: the page redraws every 2 s)."""
            out = {}
            for r in d.find_elements(By.CSS_SELECTOR, "#jobs tbody tr"):
                reason = r.find_element(By.CSS_SELECTOR, "td.reason")
                out[int(r.get_attribute("data-job"))] = {
                    "code": reason.get_attribute("data-code"),
                    "reason": reason.text,
                    "times": [c.text for c in r.find_elements(By.CSS_SELECTOR, "td.time")],
                    "ran": r.find_element(By.CSS_SELECTOR, "td.ran").text,
                    "cancel": len(r.find_elements(By.CSS_SELECTOR, "button.cancel")),
                }
            return out

        seen = WebDriverWait(drv, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
            jobs
        )
        assert set(seen) == {0, 1}  # Bob's job is not Alice's to see
        assert seen[1]["code"] == "insufficient"
        assert "need 8, free 7" in seen[1]["reason"] and "(fifo)" in seen[1]["reason"]
        times = seen[0]["times"]
        assert times[0] and times[1] and not times[2]  # submitted, started, not ended
        assert str(seen[0]["ran"]).endswith("s") and seen[1]["cancel"] == 1
        drv.execute_script("document.querySelector(\"#jobs button.cancel[data-job='1']\").click()")
        WebDriverWait(drv, 20, ignored_exceptions=(StaleElementReferenceException,)).until(
            lambda d: "cancelled by alice" in jobs(d)[1]["reason"] and not jobs(d)[1]["cancel"]
        )
        drv.save_screenshot(str(tmp_path / "dashboard-alice.png"))
    # the service is stopped: the log it left says who cancelled
    from dmlsched.service.core import Core, ServiceConfig
    from dmlsched.service.store import open_store

    core = Core(
        ServiceConfig("fifo", params={"min_workers": 1, "max_workers": 1}),
        open_store(str(tmp_path / "s.db")),
    ).open()
    assert [(r.kind, r.body.get("by")) for r in core.store.records() if r.kind == "cancel"] == [
        ("cancel", "alice")
    ]
    core.store.close()


def test_the_dashboards_what_if_button_shows_the_services_answer(
    fifo_service: ServiceProcess, browser: WebDriver
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with fifo_service as svc:
        h = svc.headers()
        httpx.post(
            svc.url + "/v1/machines", json={"name": "alpha", "capacity": CAPACITY}, headers=h
        ).raise_for_status()
        job = job_request(name="asked", epochs=1)
        want = httpx.post(svc.url + "/v1/simulate", json=job, headers=h).json()["jobs"][0]
        drv = browser
        drv.get(svc.url + "/#token=tok")
        WebDriverWait(drv, 20).until(
            lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") is not None
        )  # signed in: the page has drawn the state once
        box = drv.find_element(By.ID, "whatif-job")
        box.clear()
        box.send_keys(json.dumps(job))
        drv.find_element(By.ID, "whatif-ask").click()
        WebDriverWait(drv, 20).until(
            lambda d: d.find_element(By.ID, "whatif").get_attribute("data-answered") == "1"
        )
        cells = [c.text for c in drv.find_elements(By.CSS_SELECTOR, "#whatif-answer tbody td")]
        assert cells[0] == "asked"
        assert cells[1] == f"admitted @{want['decided_at']}"
        assert cells[2] == str(want["start"]) and cells[4] == str(want["completion"])
        assert cells[6] == want["reason"]
        assert httpx.get(svc.url + "/v1/jobs", headers=h).json() == []  # asking submitted nothing
