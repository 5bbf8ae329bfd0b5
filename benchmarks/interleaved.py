"""Timing shared by the benchmarks: interleaved rounds in one process, medians and spreads."""

import statistics
import time
from collections.abc import Callable


def interleaved_rates(
    runners: dict[str, Callable[[], object]],
    batch_size: int,
    rounds: int,
    steps_per_round: int,
    warmup_calls: int = 2,
) -> dict[str, list[float]]:
    """Sequences/s of each runner per round; runners alternate within every round so that a
    change in the machine's load hits all of them alike. `warmup_calls` calls each first
    (0 where a call is a whole run that starts cold anyway)."""
    for run in runners.values():  # tracing, XLA compilation, allocator
        for _ in range(warmup_calls):
            run()
    rates = {name: [] for name in runners}
    for _ in range(rounds):
        for name, run in runners.items():
            start = time.perf_counter()
            for _ in range(steps_per_round):
                run()
            rates[name].append(batch_size * steps_per_round / (time.perf_counter() - start))
    return rates


def report(rates: dict[str, list[float]]) -> dict[str, float]:
    """Prints the median and range of each runner; returns the medians."""
    medians = {name: statistics.median(values) for name, values in rates.items()}
    width = max(map(len, rates))
    for name, value in medians.items():
        spread = f"{min(rates[name]):.2f}-{max(rates[name]):.2f}"
        print(f"  {name:{width}s} {value:7.2f} seq/s (rounds {spread})")
    return medians
