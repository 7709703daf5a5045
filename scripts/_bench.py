"""What the benchmark scripts share: where the third-party data lies, the seeded experiment's
head, mean and 95% confidence interval over seeds, and the records of the speed runs."""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from gbxfer import Dataset, ingest, load_dataset
from gbxfer.features import build

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
BASE = ["program", "workload", "hardware"]


def ci95(values):
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return float(values.mean()), 0.0
    from scipy.stats import t

    return float(values.mean()), float(t.ppf(0.975, len(values) - 1) * values.std(ddof=1)
                                       / np.sqrt(len(values)))


def mean_ci(reports, metrics) -> dict:
    """``{metric: mean, metric_ci: 95% half-width}`` over per-seed reports, rounded."""
    out = {}
    for metric in metrics:
        out[metric], out[f"{metric}_ci"] = (round(v, 4) for v in
                                            ci95([rep[metric] for rep in reports]))
    return out


def paired_rows(results: dict, metrics, base: str | None = None) -> list[dict]:
    """One row per variant of ``results`` (``{variant: [per-seed report]}``): mean and 95% CI
    of each metric and ``d_<metric>``, the paired per-seed difference to ``base`` (default: the
    first variant)."""
    reference = results[base] if base else next(iter(results.values()))
    rows = []
    for name, reports in results.items():
        row = {"variant": name, "seeds": len(reports), **mean_ci(reports, metrics)}
        for metric in metrics:
            d, ci = ci95([a[metric] - b[metric] for a, b in zip(reports, reference,
                                                                strict=True)])
            row[f"d_{metric}"], row[f"d_{metric}_ci"] = round(d, 4), round(ci, 4)
        rows.append(row)
    return rows


def experiment(doc: str, seeds: int = 5, options=None, blocks=BASE):
    """The head of the seeded experiment scripts: ``--dataset`` / ``--seeds`` / ``--first-seed``
    parsed (and whatever ``options(parser)`` adds), the dataset's valid records and their
    features (``blocks``, or the script's ``--blocks``: program + workload + hardware unless
    given). Choices are made on seeds 100-104 and reported on
    0-4 (``--first-seed 100``: the seeds to choose on)."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--dataset", default="bundled")
    parser.add_argument("--seeds", type=int, default=seeds)
    parser.add_argument("--first-seed", type=int, default=0)
    if options is not None:
        options(parser)
    args = parser.parse_args()
    args.seed_list = list(range(args.first_seed, args.first_seed + args.seeds))
    if isinstance(getattr(args, "blocks", None), str):  # a script's own --blocks option
        blocks = args.blocks.split(",")
    dataset = load_dataset(args.dataset).filter(valid=True)
    return args, dataset, build(dataset, list(blocks))


SPEED_SOURCES = (SHARED / "bennu-ansor", SHARED / "bennu-metaschedule-a100-resnet34")


def speed_records(dataset, shared_sources=SPEED_SOURCES, seed=0, size=100_000):
    """``size`` valid records resampled (with the seed, with replacement when there are fewer)
    from ``dataset`` merged with the shared third-party data, and how many distinct records
    they were drawn from."""
    parts = [dataset] + [ingest([s]) for s in shared_sources if s.exists()]
    merged = Dataset.concat(parts).filter(valid=True)
    rows = np.random.default_rng(seed).choice(len(merged), size=size,
                                              replace=len(merged) < size)
    sampled = merged.select(np.sort(rows))
    ids = sampled.records["record_id"]  # a record drawn twice is two records: ids stay unique
    sampled.records["record_id"] = ids + "-" + ids.groupby(ids).cumcount().astype(str)
    return sampled, len(merged)
