"""How long the `llm` extra takes to build on this machine.

llama-cpp-python ships as a source distribution: pip compiles llama.cpp with
the machine's gcc and cmake. This times that build once, from the sdist into a
scratch folder with no wheel cache, with the CMAKE_ARGS that README.md and
.ci/run use (the examples, tools, tests and llama.cpp's own server are left
out; the Python server in the `server` extra needs none of them), and records
the load average beside it, since a loaded machine builds several times slower.

    python benchmarks/llm_build.py            # writes results/benchmarks/llm_build.csv
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PACKAGE = "llama-cpp-python"
CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF "
    "-DLLAMA_BUILD_TOOLS=OFF "
    "-DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DGGML_OPENMP=OFF"
)


def pinned_version(constraints: Path) -> str:
    """The version constraints.txt pins, so the benchmark builds what users install."""
    for line in constraints.read_text(encoding="utf-8").splitlines():
        name, _, version = line.partition("==")
        if name.strip().lower() == PACKAGE:
            return version.strip()
    raise SystemExit(f"{constraints}: no pin for {PACKAGE}")


def build_seconds(version: str, cmake_args: str, wheel_folder: Path) -> float:
    """Seconds pip takes to build the wheel from its sdist, dependencies not included."""
    environment = dict(os.environ, CMAKE_ARGS=cmake_args)
    command = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "--no-cache-dir",
        "--no-binary",
        PACKAGE,
        f"{PACKAGE}=={version}",
        "-w",
        str(wheel_folder),
    ]
    started = time.perf_counter()
    subprocess.run(command, check=True, env=environment)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default="results/benchmarks/llm_build.csv")
    parser.add_argument("--keep-wheel", help="copy the built wheel into this folder")
    arguments = parser.parse_args()
    version = pinned_version(Path("constraints.txt"))
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as scratch:
        seconds = build_seconds(version, CMAKE_ARGS, Path(scratch))
        if arguments.keep_wheel:
            Path(arguments.keep_wheel).mkdir(parents=True, exist_ok=True)
            for wheel in Path(scratch).glob("*.whl"):
                (Path(arguments.keep_wheel) / wheel.name).write_bytes(wheel.read_bytes())
    row = {
        "package": PACKAGE,
        "version": version,
        "cmake_args": CMAKE_ARGS,
        "seconds": f"{seconds:.1f}",
        "cores": os.cpu_count(),
        "machine": platform.machine(),
        "load_average_before": f"{load_before:.2f}",
        "load_average_after": f"{os.getloadavg()[0]:.2f}",
    }
    Path(arguments.output).parent.mkdir(parents=True, exist_ok=True)
    with open(arguments.output, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(row), lineterminator="\n")
        writer.writeheader()
        writer.writerow(row)
    print(f"{PACKAGE} {version}: built in {seconds:.0f} s on {row['cores']} cores (load {load_before:.2f})")


if __name__ == "__main__":
    main()
