"""Sorted runs: how both engines put records in shard order without holding them all.

An item is a tuple whose first three fields are `(shard, sort_key, record)` (the local engine
carries the record's example after them); items are ordered by those three, a total order,
ties of the hash included. A writer sorts a bounded buffer of items, writes it as a run
(`write_run`: pickled items, one after the other) and, at the end, merges the runs with
`merge_runs` (a k-way merge, at most `MAX_OPEN_RUNS` runs open at once). The file handles
are the caller's: local files in `writer.py`, Beam's FileSystems in `beam.py`.
"""

from __future__ import annotations

import heapq
import pickle
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO, TypeVar

# Runs read at once while merging; beyond, the first ones are merged into one run first.
MAX_OPEN_RUNS = 64

Run = TypeVar("Run")


def order(item: tuple) -> tuple:
    return item[:3]  # (shard, sort_key, record)


def write_run(handle: BinaryIO, items: Iterable[tuple]) -> dict[int, tuple[int, int]]:
    """Writes sorted `items` into `handle` (opened for this run); per shard, where its items
    start in the file and how many there are."""
    sections: dict[int, tuple[int, int]] = {}
    offset = 0
    for item in items:
        data = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
        start, count = sections.get(item[0], (offset, 0))
        sections[item[0]] = (start, count + 1)
        handle.write(data)
        offset += len(data)
    return sections


def read_run(handle: BinaryIO, count: int | None = None) -> Iterator[tuple]:
    """The items of a run from the handle's position: `count` of them, or all to its end."""
    if count is not None:
        for _ in range(count):
            yield pickle.load(handle)
        return
    while True:
        try:
            yield pickle.load(handle)
        except EOFError:
            return


def merge_runs(
    runs: Iterable[Run],
    read: Callable[[Run], Iterator[tuple]],
    write: Callable[[Iterator[tuple]], Run],
    in_memory: Iterable[tuple] = (),
) -> Iterator[tuple]:
    """The items of sorted `runs` (and of sorted `in_memory`) in order.

    `read` opens a run and yields its items; `write` writes items as a new run. With more than
    `MAX_OPEN_RUNS` runs, the first ones are merged into a run of their own (through `write`)
    until `MAX_OPEN_RUNS` are left: open files and read buffers stay bounded however many runs
    a corpus makes.
    """
    runs = list(runs)
    while len(runs) > MAX_OPEN_RUNS:
        size = min(MAX_OPEN_RUNS, len(runs) - MAX_OPEN_RUNS + 1)
        merged = write(heapq.merge(*map(read, runs[:size]), key=order))
        runs = [*runs[size:], merged]
    yield from heapq.merge(*map(read, runs), in_memory, key=order)
