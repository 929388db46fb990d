"""workflow/rules/scheduling.smk: Snakemake's scheduler keeps one pending re-evaluation, not one per round."""

import runpy
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from snakemake.scheduling.job_scheduler import JobScheduler

SCHEDULING = Path(__file__).resolve().parents[2] / "workflow" / "rules" / "scheduling.smk"


def releases(semaphore: threading.Semaphore) -> int:
    count = 0
    while semaphore.acquire(blocking=False):
        count += 1
    return count


def test_the_scheduler_method_is_replaced():
    namespace = runpy.run_path(str(SCHEDULING))
    assert JobScheduler._schedule_reevalutation is namespace["_schedule_one_reevaluation"]


def test_many_rounds_start_one_timer_and_the_next_round_may_start_another():
    schedule = runpy.run_path(str(SCHEDULING))["_schedule_one_reevaluation"]
    scheduler = SimpleNamespace(_open_jobs=threading.Semaphore(0))
    for _ in range(50):
        schedule(scheduler, 0.05)
    time.sleep(0.3)
    # Upstream, each of the 50 rounds would have released the semaphore once.
    assert releases(scheduler._open_jobs) == 1
    schedule(scheduler, 0.05)
    time.sleep(0.3)
    assert releases(scheduler._open_jobs) == 1


def test_the_timer_does_not_keep_the_run_alive():
    schedule = runpy.run_path(str(SCHEDULING))["_schedule_one_reevaluation"]
    before = set(threading.enumerate())
    schedule(SimpleNamespace(_open_jobs=threading.Semaphore(0)), 5.0)
    timers = [thread for thread in threading.enumerate() if thread not in before]
    assert timers and all(thread.daemon for thread in timers)
    for thread in timers:
        thread.cancel()
