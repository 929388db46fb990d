"""workflow/rules/snakemake_patches.smk: one pending re-evaluation; parameters compared without pandas."""

import runpy
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

from snakemake.persistence import PersistenceBase
from snakemake.scheduling.job_scheduler import JobScheduler

SCHEDULING = Path(__file__).resolve().parents[2] / "workflow" / "rules" / "snakemake_patches.smk"


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


class BlockPandas:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pandas":
            raise AssertionError(f"{name} imported")
        return None


def test_parameters_are_serialized_as_snakemake_does_without_loading_pandas(monkeypatch):
    """Values the plan passes give Snakemake's own strings; pandas objects still get its pandas digest."""
    import pandas as pd

    namespace = runpy.run_path(str(SCHEDULING))
    serialize, original = namespace["_serialize_param"], namespace["_serialize_param"].__wrapped__
    assert PersistenceBase._serialize_param_pandas is serialize
    assert original.__qualname__ == "PersistenceBase._serialize_param_pandas"
    stub = type("Stub", (), {"_serialize_param_builtin": PersistenceBase._serialize_param_builtin})()
    values = ["text", 3, 0.5, None, ("a", 1), {"k": [1, 2]}, frozenset({1}), b"x", object()]
    expected = [original(stub, value) for value in values]
    with monkeypatch.context() as patch:
        patch.delitem(sys.modules, "pandas")
        patch.setattr(sys, "meta_path", [BlockPandas(), *sys.meta_path])
        assert [serialize(stub, value) for value in values] == expected
    frame = pd.DataFrame({"a": [1, 2]})
    assert serialize(stub, frame) == original(stub, frame) != serialize(stub, repr(frame))
