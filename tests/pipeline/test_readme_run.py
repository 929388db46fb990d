"""The README's blocks, run as written in a fresh clone: a clean tree under any BLAS kernel, the ablation.

A user who follows the README must be able to tell their own change from
noise: two builds of one commit give the same bytes in every tracked file,
whatever the CPU, and what measures the machine (results/timings/) or is not
a result (the HTML report) lands where git does not look.

The clone gets a virtual environment prepared here instead of the block's
own set-up (``tests/readme_blocks.without_setup``), which would install every
extra and build llama.cpp from source: a venv whose site-packages point at
the running interpreter's (through a ``.pth`` file), with its ``snakemake``
and ``rag`` programs. Everything else in the block runs exactly as written.

After the first block, the jobs whose numbers come from floating-point
arithmetic (the rankings, the embedder's users, the learned fusion, IVF) run
again under two OpenBLAS kernels other than this machine's, with the
embedding cache emptied so that MiniLM encodes every text again under that
kernel, and the tree must stay clean each time (docs/formats.md,
"Precision"). Then the README's ablation block runs as written (its
``cp config.yaml ablation.yaml`` followed by the entries of the README's
YAML block, as its comment says), reusing the build; every link of every
generated README must resolve.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from tests.readme_blocks import PROJECT, README, commands, shell_blocks, without_setup

# docs/comparisons.md, "The HTML report".
REPORT = ".venv/bin/snakemake --report results/report.html --report-metadata results/report_metadata.yaml"
PROGRAMS = ("snakemake", "rag")
# Kernels of the OpenBLAS in numpy's wheel (OPENBLAS_CORETYPE) that every x86-64
# CPU of the last decade can run: AVX2, AVX and SSE4.2. (Zen runs Haswell's
# kernels there; SkylakeX needs AVX-512.) Two that differ from the machine's own are used.
KERNELS = ("Sandybridge", "Haswell", "Nehalem")
# Every rule whose numbers come from floating-point products (BLAS or the
# embedder); the jobs downstream of them run again as their inputs change.
FLOAT_RULES = (
    "rank",
    "rank_embedder",
    "rank_ivf",
    "rank_filtered",
    "rank_ivf_filtered",
    "rank_question_set",
    "fuse",
    "fuse_filtered",
    "fuse_learned",
    "learned_filtered",
    "funnel",
    "funnel_filtered",
    "answer",
    "answer_from_summaries",
    "answers_heldout",
    "reader_rules",
    "route",
    "prompt_vectors",
    "ask_vectors",
    "grounding",
    "ivf_tradeoff",
    "ivf_synthetic",
)
# What the README says lists the jobs before anything runs.
DRY_RUN = ".venv/bin/snakemake -n --cores 4"
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _git(*arguments: str, cwd: Path) -> str:
    return subprocess.run(["git", *arguments], cwd=cwd, capture_output=True, text=True, check=True).stdout


def _prepared_venv(clone: Path) -> None:
    """``clone/.venv`` over the running interpreter's packages, with the programs the README calls."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(clone / ".venv")], check=True)
    python = clone / ".venv" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    outer = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    lines = "".join(f"import site; site.addsitedir({path!r})\n" for path in outer)
    Path(purelib, "outer_packages.pth").write_text(lines)
    for program in PROGRAMS:
        source = Path(sys.executable).parent / program
        if not source.is_file():
            pytest.skip(f"{source} is missing: run the tests from the project's venv")
        script = source.read_text().split("\n", 1)[1]
        target = clone / ".venv" / "bin" / program
        target.write_text(f"#!{python}\n{script}")
        target.chmod(0o755)


def _status(clone: Path) -> str:
    return _git("status", "--porcelain", "--untracked-files=all", cwd=clone)


def _run(script: str, clone: Path, **environment: str) -> None:
    run = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=clone,
        capture_output=True,
        text=True,
        env={**os.environ, **environment},
    )
    assert run.returncode == 0, script + "\n" + run.stdout[-3000:] + run.stderr[-3000:]


def default_kernel() -> str | None:
    """The OpenBLAS kernel numpy uses here (threadpoolctl's ``architecture``), if it says."""
    import numpy  # noqa: F401  (loads its OpenBLAS, which threadpoolctl then sees)
    from threadpoolctl import threadpool_info

    found = [pool.get("architecture") for pool in threadpool_info() if pool.get("internal_api") == "openblas"]
    return found[0] if found else None


def other_kernels(default: str | None, count: int = 2) -> list[str]:
    """``count`` kernels of KERNELS other than ``default`` (compared without case)."""
    return [kernel for kernel in KERNELS if kernel.lower() != (default or "").lower()][:count]


def broken_links(readme: Path) -> list[str]:
    """The relative links of a Markdown file whose target does not exist."""
    broken = []
    for target in _LINK.findall(readme.read_text(encoding="utf-8")):
        path = target.split("#", 1)[0]
        if not path or re.match(r"^[a-z]+:", path):
            continue
        if not (readme.parent / path).exists():
            broken.append(f"{readme.name}: {target}")
    return broken


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """A fresh clone of HEAD, after the README's first block (without its set-up)."""
    try:
        commit = _git("rev-parse", "HEAD", cwd=PROJECT).strip()
    except (subprocess.CalledProcessError, FileNotFoundError) as error:
        pytest.skip(f"not a git checkout: {error}")
    folder = tmp_path_factory.mktemp("readme") / "clone"
    _git("clone", "--quiet", "--no-checkout", str(PROJECT), str(folder), cwd=folder.parent)
    _git("checkout", "--quiet", commit, cwd=folder)
    _prepared_venv(folder)
    assert _status(folder) == ""  # .venv/ is ignored
    _run(without_setup(shell_blocks(README.read_text(encoding="utf-8"))[0]), folder)
    return folder


def test_the_first_block_and_the_report_leave_the_clone_clean(clone):
    assert _status(clone) == "", "the README's first block changed tracked files"
    _run(REPORT, clone)
    assert (clone / "results" / "report.html").is_file()
    assert _status(clone) == "", "building the report changed tracked files"


def test_other_blas_kernels_leave_the_clone_clean(clone):
    kernels = other_kernels(default_kernel())
    assert len(kernels) == 2
    for kernel in kernels:
        # An empty embedding cache: MiniLM encodes every text again, under this kernel.
        shutil.rmtree(clone / "cache" / "embeddings", ignore_errors=True)
        _run(
            f".venv/bin/snakemake --cores 4 --forcerun {' '.join(FLOAT_RULES)}",
            clone,
            OPENBLAS_CORETYPE=kernel,
        )
        assert _status(clone) == "", f"under OPENBLAS_CORETYPE={kernel} tracked files changed"


def _ablation_block() -> str:
    return next(
        block for block in shell_blocks(README.read_text(encoding="utf-8")) if "ablation.yaml" in block
    )


def _readme_entries() -> dict:
    """The README's YAML block of "Add an ablation": the entries an ablation adds."""
    text = README.read_text(encoding="utf-8")
    block = re.search(r"^```yaml\n(.*?)^```", text, re.MULTILINE | re.DOTALL)
    assert block is not None, "the README has no YAML block"
    return yaml.safe_load(block.group(1))


def test_the_ablation_block_runs_as_written_and_every_generated_link_resolves(clone):
    entries = _readme_entries()
    for command in commands(_ablation_block()):
        _run(shlex.join(command), clone)
        if command[:3] == ["cp", "config.yaml", "ablation.yaml"]:  # "and add the entry there"
            config = yaml.safe_load((clone / "ablation.yaml").read_text())
            for section, added in entries.items():
                config[section].update(added)
            (clone / "ablation.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
            _run(f"{DRY_RUN} --configfile ablation.yaml --config results=results_ablation", clone)
    for folder in ("results", "results_ablation"):
        assert (clone / folder / "README.md").is_file()
        assert broken_links(clone / folder / "README.md") == []
