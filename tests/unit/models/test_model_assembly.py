"""Model assembly reads only regular files of their published size, and hands the server what it checked.

Stand-in parts (a few bytes) replace the 22 Qwen packages: a part that is a
FIFO is refused without hanging, a part symlinked to /dev/zero (or out of its
package) is refused without reading it, a part longer than its package
records is refused, and a model path that is a directory is one line, not a
traceback. An edit that keeps the size and restores the modification time is
still re-hashed (the change time moved), and the server is given
``/proc/self/fd/N`` of the file that was checked: swapping the path after
the check changes nothing the server reads.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from rag.models import local_server
from rag.models.local_server import BundledModel, LocalServerError, Part

LINUX = Path("/proc/self/fd").is_dir()


def model_of(parts: list[bytes]) -> BundledModel:
    return BundledModel(
        alias="Stand-In",
        file_name="stand-in.gguf",
        sha256=hashlib.sha256(b"".join(parts)).hexdigest(),
        distributions=tuple(f"stand-in-part{n}" for n in range(1, len(parts) + 1)),
        part_pattern=r"data/part\d\d\.bin",
        extra="llm-stand-in",
    )


def packaged(folder: Path, parts: list[bytes]) -> list[Part]:
    """Each part in a package folder of its own, with its size as a RECORD would give it."""
    found = []
    for number, data in enumerate(parts, 1):
        root = folder / f"package{number}"
        (root / "data").mkdir(parents=True)
        path = root / "data" / f"part{number:02d}.bin"
        path.write_bytes(data)
        found.append(Part(path, len(data), root))
    return found


def assemble(tmp_path: Path, parts: list[Part], model: BundledModel) -> str:
    with pytest.raises(LocalServerError) as caught:
        local_server.assemble(model, parts, tmp_path / "models" / "x.gguf")
    assert "\n" not in str(caught.value)
    assert list((tmp_path / "models").iterdir()) == []
    return str(caught.value)


@pytest.mark.skipif(not LINUX, reason="FIFOs and /dev/zero")
def test_a_fifo_part_is_refused_without_hanging(tmp_path):
    data = [b"alpha", b"beta"]
    parts = packaged(tmp_path, data)
    parts[1].path.unlink()
    os.mkfifo(parts[1].path)
    assert "is a FIFO, not a regular file" in assemble(tmp_path, parts, model_of(data))


@pytest.mark.skipif(not LINUX, reason="FIFOs and /dev/zero")
def test_a_part_linked_to_dev_zero_or_out_of_its_package_is_refused(tmp_path):
    data = [b"alpha", b"beta"]
    parts = packaged(tmp_path, data)
    parts[0].path.unlink()
    parts[0].path.symlink_to("/dev/zero")
    assert "leads outside its package" in assemble(tmp_path, parts, model_of(data))
    # Even inside the package, a device is not a part.
    parts[0].path.unlink()
    os.symlink("/dev/zero", parts[0].root / "zero")
    parts[0].path.symlink_to(parts[0].root / "zero")
    assert "leads outside its package" in assemble(tmp_path, parts, model_of(data))
    outside = tmp_path / "elsewhere.bin"
    outside.write_bytes(b"alpha")
    parts[0].path.unlink()
    parts[0].path.symlink_to(outside)
    assert "leads outside its package" in assemble(tmp_path, parts, model_of(data))


def test_a_part_longer_than_its_record_is_refused_and_a_part_directory_too(tmp_path):
    data = [b"alpha", b"beta"]
    parts = packaged(tmp_path, data)
    parts[1].path.write_bytes(b"beta" + b"\0" * 1000)
    assert "not the 4 its package records" in assemble(tmp_path, parts, model_of(data))
    parts[1].path.unlink()
    parts[1].path.mkdir()
    assert "is a directory" in assemble(tmp_path, parts, model_of(data))


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    data = [b"alpha", b"beta"]
    model = model_of(data)
    parts = packaged(tmp_path / "site", data)
    monkeypatch.setitem(local_server.BUNDLED_MODELS, model.alias, model)
    monkeypatch.setattr(local_server, "_part_paths", lambda wanted: parts)
    monkeypatch.setenv(local_server.MODEL_DIR_VARIABLE, str(tmp_path / "models"))
    return model, tmp_path / "models" / model.file_name


def test_a_model_path_that_is_a_directory_is_one_line(stand_in):
    model, target = stand_in
    target.mkdir(parents=True)
    with pytest.raises(LocalServerError) as caught:
        local_server.model_path(model.alias)
    assert "is a directory, not the assembled model file" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_an_edit_that_restores_the_modification_time_is_rehashed(stand_in):
    model, target = stand_in
    assert local_server.model_path(model.alias).read_bytes() == b"alphabeta"
    status = target.stat()
    target.write_bytes(b"alphabetA")  # same size
    os.utime(target, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert target.stat().st_mtime_ns == status.st_mtime_ns and target.stat().st_size == status.st_size
    with pytest.raises(LocalServerError) as caught:
        local_server.model_path(model.alias)
    assert "delete" in str(caught.value)


@pytest.mark.skipif(not LINUX, reason="/proc/self/fd")
def test_the_server_is_handed_the_file_that_was_checked(stand_in):
    model, target = stand_in
    argument = local_server.model_file(model.alias)
    assert argument.startswith("/proc/self/fd/")
    handle = int(argument.rsplit("/", 1)[1])
    assert handle in local_server._HELD_MODELS.values()
    # Swapping the path after the check changes nothing the server reads.
    target.unlink()
    target.write_bytes(b"evil-data")
    assert os.pread(handle, 100, 0) == b"alphabeta"
    # The next start checks again, and refuses the swapped file.
    with pytest.raises(LocalServerError):
        local_server.server_command(1, alias=model.alias)
