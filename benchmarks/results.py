"""Where a benchmark leaves its raw results: one JSON file beside the figures it prints.

Every benchmark script takes `--results-json PATH` (default `runs/benchmarks/<script>.json`) and
writes there what it measured, with the command line, the date and the machine, so a figure
quoted in the README can be checked against the run that produced it.
"""

import datetime
import json
import os
import platform
import sys
import tempfile


def default_path(script: str) -> str:
    """`runs/benchmarks/<script name>.json`, relative to the working directory."""
    name = os.path.splitext(os.path.basename(script))[0]
    return os.path.join("runs", "benchmarks", f"{name}.json")


def write_results(path: str, results: dict) -> str:
    """Writes `results` (plus the command, date and machine) to `path` atomically; prints and
    returns the path."""
    record = {
        "command": " ".join([os.path.relpath(sys.argv[0]), *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpus": os.cpu_count(), "processor": platform.machine()},
        "results": results,
    }
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", encoding="utf-8", dir=directory, suffix=".partial", delete=False
    ) as f:
        json.dump(record, f, indent=2)
    os.replace(f.name, path)
    print(f"raw results: {path}")
    return path


def directory_bytes(path: str) -> int:
    """The bytes of every file below `path` (an export's or a checkpoint's size)."""
    return sum(
        os.path.getsize(os.path.join(root, name))
        for root, _, names in os.walk(path)
        for name in names
    )
