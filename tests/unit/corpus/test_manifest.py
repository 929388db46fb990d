"""Content digests of a corpus's files: they change with the bytes, never with a modification time alone."""

from __future__ import annotations

import hashlib
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rag.corpus.manifest import changed_files, content_digest, content_manifest

FILES = st.dictionaries(st.sampled_from(["a.md", "b.md", "c.html"]), st.binary(max_size=64), min_size=1)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(FILES, FILES, st.integers(1, 10**9))
def test_the_digest_changes_iff_a_files_bytes_or_name_change(tmp_path_factory, before, after, seconds):
    folder = tmp_path_factory.mktemp("corpus")
    paths = {}
    for name, data in before.items():
        (folder / name).write_bytes(data)
        paths[name] = folder / name
    first = content_digest(paths.values())
    manifest = content_manifest(paths.values())
    assert manifest == {str(path): hashlib.sha256(before[name]).hexdigest() for name, path in paths.items()}
    for path in paths.values():  # a modification time alone (touch, or an older one as cp -p keeps)
        os.utime(path, (seconds, seconds))
    assert content_digest(paths.values()) == first
    for name in before:
        (folder / name).unlink()
    for name, data in after.items():
        (folder / name).write_bytes(data)
        os.utime(folder / name, (seconds, seconds))
    now = [folder / name for name in after]
    assert (content_digest(now) == first) == (before == after)
    expected = sorted(str(folder / n) for n in set(before) | set(after) if before.get(n) != after.get(n))
    assert changed_files(manifest, content_manifest(now)) == expected
