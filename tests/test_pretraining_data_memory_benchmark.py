"""`benchmarks/pretraining_data_memory.py` on tiny corpora: the corpora grow by whole copies of
their sources, every engine runs the user's command and is measured, and the engines make the
same number of examples from the same corpus (the tool's output does not depend on them)."""

import os

import pytest

from benchmarks import pretraining_data_memory

DOCUMENT = (
    "The garden was quiet in the morning. Birds sang on the old wall. "
    "A gardener walked between the roses.\nShe read a letter twice. It came from her sister "
    "in town. The news was good.\n\n"
)


def write_sources(directory) -> int:
    os.makedirs(directory)
    for index in range(3):
        with open(os.path.join(directory, f"book{index}.txt"), "w", encoding="utf-8") as file:
            file.write(f"Book {index}.\n" + DOCUMENT * (20 + 10 * index))
    return sum(os.path.getsize(os.path.join(directory, name)) for name in os.listdir(directory))


def test_a_corpus_is_whole_copies_of_its_sources(tmp_path):
    source_bytes = write_sources(tmp_path / "sources")
    written = pretraining_data_memory.build_corpus(
        str(tmp_path / "corpus"), 2 * source_bytes, str(tmp_path / "sources")
    )
    assert written == 2 * source_bytes
    names = sorted(os.listdir(tmp_path / "corpus"))
    assert names == [f"copy{c:04d}_book{i}.txt" for c in range(2) for i in range(3)]
    with pytest.raises(ValueError, match=r"`sources` must hold text files. Received: sources="):
        pretraining_data_memory.build_corpus(str(tmp_path / "x"), 10, str(tmp_path / "corpus2"))


@pytest.mark.slow  # three runs of the command per size, each importing TensorFlow
def test_every_engine_is_measured_and_makes_the_same_examples(tmp_path):
    source_bytes = write_sources(tmp_path / "sources")
    sizes = f"{source_bytes / 1e6},{2 * source_bytes / 1e6}"
    results = pretraining_data_memory.main(
        ["--sizes-mb", sizes, "--engines", "local:1,local:2,beam", "--dupe-factor", "1",
         "--sources", str(tmp_path / "sources"), "--work-dir", str(tmp_path),
         "--results-json", str(tmp_path / "memory.json")]
    )  # fmt: skip
    runs = results["runs"]
    assert len(runs) == 6
    for size in sizes.split(","):
        counts = {runs[f"{engine}/{float(size):g}MB"]["examples"] for engine in
                  ("local:1", "local:2", "beam")}  # fmt: skip
        (count,) = counts
        assert count > 0
    for run in runs.values():
        assert run["samples"] > 0 and run["peak_tree_rss_bytes"] >= run["peak_process_rss_bytes"]
        assert run["peak_process_rss_bytes"] > 50 * 2**20  # a Python process with TensorFlow
        assert run["cpu_seconds"] > 0
    assert set(results["ratios"]) == {"local:1", "local:2", "beam"}
