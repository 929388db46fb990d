# Two fixes to Snakemake 9 itself, each replacing one private method. Where a
# Snakemake version has no such method, nothing is changed; Snakemake is
# pinned in constraints.txt and tests/unit/test_snakemake_patches.py fails if
# a method is no longer replaced.
#
# 1. One pending re-evaluation in Snakemake's job scheduler, not one per round.
#
# Snakemake 9's scheduler ends every scheduling round by starting a timer that
# starts another round a second later (for its job rate limiter,
# --max-jobs-per-timespan, on by default at 100/1s). The round a timer starts
# ends by starting a timer too, so every finished job adds one more
# once-a-second chain that lives until the run ends. Over the bundled grid's
# ~220 jobs that grew to about 18,700 rounds, each stat-ing the input of
# every ready job: 30 to 40 s of the main process's CPU, taken from the jobs
# on a two-core machine (docs/performance.md). The upstream report is
# snakemake/snakemake pull request #3744.
#
# Here a round only starts a timer when none is pending, so the rate limiter
# is still re-checked within its timespan, and the timer is a daemon thread,
# so the run does not wait for it at exit. Where a Snakemake version has no
# such method, nothing is changed.
import sys
import threading

from snakemake import persistence as _persistence
from snakemake.scheduling import job_scheduler as _job_scheduler


def _schedule_one_reevaluation(scheduler, delay):
    if getattr(scheduler, "_reevaluation_pending", False):
        return
    scheduler._reevaluation_pending = True

    def release():
        scheduler._reevaluation_pending = False
        scheduler._open_jobs.release()

    timer = threading.Timer(delay, release)
    timer.daemon = True
    timer.start()


if hasattr(getattr(_job_scheduler, "JobScheduler", None), "_schedule_reevalutation"):
    _job_scheduler.JobScheduler._schedule_reevalutation = _schedule_one_reevaluation


# 2. Parameters compared without importing pandas.
#
# To tell whether a job's parameters changed, Snakemake serializes each one,
# and its serializer imports pandas to ask whether the value is a DataFrame:
# about 0.3 s of every start, no-op included, although the plan does not use
# pandas. A value can only be a pandas object once pandas is loaded, so while
# it is not, the answer is Snakemake's own one for builtin values, exactly.
_serialize_param_with_pandas = getattr(_persistence.PersistenceBase, "_serialize_param_pandas", None)
# Included twice in one process (the tests do), the patch still wraps Snakemake's own method.
_serialize_param_with_pandas = getattr(
    _serialize_param_with_pandas, "__wrapped__", _serialize_param_with_pandas
)


def _serialize_param(persistence, value):
    if "pandas" not in sys.modules:
        return persistence._serialize_param_builtin(value)
    return _serialize_param_with_pandas(persistence, value)


_serialize_param.__wrapped__ = _serialize_param_with_pandas
if _serialize_param_with_pandas is not None and hasattr(
    _persistence.PersistenceBase, "_serialize_param_builtin"
):
    _persistence.PersistenceBase._serialize_param_pandas = _serialize_param
