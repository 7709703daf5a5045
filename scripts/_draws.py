"""The shot draws of `scripts/bench_transfer.py`'s settings, one per (setting, seed, K), logged
as they finish so that a killed run resumes: the loop that the comparisons built on its
settings share."""
from __future__ import annotations

import time

from _results import log_draw, logged_draws
from bench_transfer import fingerprint, prepared, settings


def each_draw(name: str, which, match: str, seeds, shots, config, compute, describe,
              report_only: bool = False) -> list[dict]:
    """Every (setting, seed, K) row of ``results/<name>.jsonl`` for the settings ``which``
    whose name contains ``match`` (a regime (b) K, ``calN``, only where the setting runs
    regime (b)); a missing one (unless ``report_only``) is
    ``compute(source, target, only, shared, seed, k)`` (a dict, or None: no draw there;
    ``shared`` is bench_transfer's ``prepared``, built once a setting), logged and printed with
    ``describe(row)``."""
    logged = logged_draws(name)
    rows = []
    for setting, source, target, only, calibration in settings(which):
        if match not in setting:
            continue
        data, shared = fingerprint(source, target, only), None
        for seed in seeds:
            for k in shots:
                if isinstance(k, str) and not calibration:
                    continue
                row = logged.get((setting, seed, k, data))
                if row is None and not report_only:
                    shared = shared or prepared(source, target, config)
                    start = time.perf_counter()
                    result = compute(source, target, only, shared, seed, k)
                    if result is None:
                        continue
                    row = {"setting": setting, "seed": seed, "k": k, "data": data, **result,
                           "seconds": round(time.perf_counter() - start, 1)}
                    log_draw(name, row)
                    print(f"{setting} seed {seed} K={k}: {describe(row)} "
                          f"({row['seconds']:.0f} s)", flush=True)
                if row is not None:
                    rows.append(row)
    return rows


def add_setting_options(parser, default: str) -> None:
    """``--settings`` (bench_transfer's, comma-separated) and ``--match``."""
    parser.add_argument("--settings", default=default, help="bench_transfer's settings")
    parser.add_argument("--match", default="", metavar="TEXT",
                        help="only the settings whose name contains TEXT")
