"""The SLURM profile on a real (single-node) SLURM cluster.

workflow/profiles/slurm/local-cluster.sh installs and starts munged,
slurmctld and slurmd on this machine; the tiny fixture then runs through
``snakemake --profile workflow/profiles/slurm``. The test checks on SLURM's
side that every submitted job ran there and completed (squeue keeps finished
jobs for MinJobAge, and the plugin's per-job logs are kept), and that the
results are byte for byte those of a local run of the same fixture.

It needs root and Debian's slurm-wlm and munge packages: without them it is
skipped with their install command, unless RAG_REQUIRE_SYSTEM_PACKAGES=1
(which .ci/run sets), when local-cluster.sh installs them with apt-get. The
executor plugin comes with the project's ``slurm`` extra.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.extras import REQUIRE_SYSTEM_PACKAGES, missing_programs, require_extra, require_system_package
from tests.workdir import PROJECT, copy_project, make_workdir, snakemake

pytestmark = [pytest.mark.pipeline, pytest.mark.slurm]

PROFILE = PROJECT / "workflow" / "profiles" / "slurm"
CLUSTER_SCRIPT = PROFILE / "local-cluster.sh"

_CAN_INSTALL = os.geteuid() == 0 and shutil.which("apt-get") is not None


def _cluster(action: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(CLUSTER_SCRIPT), action], capture_output=True, text=True, timeout=900, check=False
    )


@pytest.fixture(scope="module")
def cluster():
    """A running single-node cluster; stopped afterwards only if this test started it."""
    require_extra("slurm")
    # Installed by local-cluster.sh only when the environment asks for system packages.
    if missing_programs("slurm") and not (_CAN_INSTALL and os.environ.get(REQUIRE_SYSTEM_PACKAGES) == "1"):
        require_system_package("slurm")
    if os.geteuid() != 0:
        pytest.skip("a local SLURM cluster needs root: local-cluster.sh starts munged, slurmctld and slurmd")
    was_running = _cluster("status").returncode == 0
    started = _cluster("start")
    assert started.returncode == 0, f"local-cluster.sh start failed:\n{started.stdout}\n{started.stderr}"
    yield
    if not was_running:
        _cluster("stop")


def _result_files(workdir: Path) -> dict[str, bytes]:
    """Every result file's bytes; a table with declared timing columns (rag.pipeline.reproduce) without them.

    The timings folder (rag.timing.TIMINGS_FOLDER) measures the machine, not the method:
    it is left out, as rag.pipeline.reproduce leaves it out.
    """
    import csv
    import io

    from rag.pipeline.reproduce import TIMING_COLUMNS
    from rag.timing import TIMINGS_FOLDER

    root = workdir / "results"
    files = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        name = str(path.relative_to(root))
        if path.relative_to(root).parts[0] == TIMINGS_FOLDER:
            continue
        timing = TIMING_COLUMNS.get(name)
        if timing is None:
            files[name] = path.read_bytes()
            continue
        rows = list(csv.reader(io.StringIO(path.read_text())))
        kept = [index for index, column in enumerate(rows[0]) if column not in timing]
        files[name] = "\n".join(",".join(row[index] for index in kept) for row in rows).encode()
    return files


def test_tiny_pipeline_runs_through_slurm_and_matches_a_local_run(cluster, tmp_path):
    project = copy_project(tmp_path / "project")
    snakefile = project / "Snakefile"

    local = make_workdir(tmp_path / "local")
    snakemake(local, "--cores", "2", snakefile=snakefile)

    on_slurm = make_workdir(tmp_path / "slurm")
    result = snakemake(
        on_slurm,
        "--profile",
        str(PROFILE),
        # A one-node cluster answers at once: poll squeue every few seconds.
        "--slurm-init-seconds-before-status-checks",
        "2",
        "--slurm-keep-successful-logs",
        "--jobs",
        "4",
        snakefile=snakefile,
    )
    output = result.stdout + result.stderr

    # Every job but the local `all` was submitted to SLURM, the rankings as one group job.
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+) \(log: (\S+)\)", output)
    assert len(submitted) >= 5, output
    assert any("group_rankings" in log for _, log in submitted), "the rank jobs were not grouped"
    assert "localrule all:" in output
    # SLURM's own record: each job is known to squeue (MinJobAge keeps finished
    # jobs listed) and completed; each left its log on the run's side.
    job_ids = [job_id for job_id, _ in submitted]
    states = subprocess.run(
        ["squeue", "--states=all", "--noheader", "--format=%i %T", "--jobs", ",".join(job_ids)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert dict(zip(states[::2], states[1::2], strict=True)) == dict.fromkeys(job_ids, "COMPLETED")
    for _, log in submitted:
        assert Path(log).is_file(), f"missing SLURM job log {log}"

    local_files = _result_files(local)
    slurm_files = _result_files(on_slurm)
    assert sorted(slurm_files) == sorted(local_files)
    assert "metrics.csv" in local_files
    different = [name for name in local_files if local_files[name] != slurm_files[name]]
    assert different == [], f"results differ between the SLURM and the local run: {different}"
