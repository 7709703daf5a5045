"""Ablation of the numpy hardware attention (feature-group gating) on unseen hardware.

    python scripts/bench_attention.py [--dataset bundled] [--seeds 5] [--first-seed 0]
                                      [--split by-machine|by-hardware|by-task]
                                      [--name bench_attention_<split>]

For each physical machine (``--split by-machine``: every profile of one CPU held out, the model
trains on the other machines) or each hardware family (``by-hardware``: the split of the first
runs, when the dataset held one machine) of the dataset held out in turn, or 30% of the tasks
(``by-task``: every machine seen in training, the gate's weights those of known hardware), and
each seed, the default model config is trained with and without ``attention:`` gating on the
rest and evaluated on the held-out part. Reports mean +- 95% CI over seeds per held-out part
and over all (part, seed) pairs, and the paired difference (with - without). Results:
scripts/results/<name>.{json,csv}.
"""
from __future__ import annotations

from _results import print_table, write_results
from _bench import ci95, experiment

from gbxfer import SplitSpec
from gbxfer.model import load_model_config
from gbxfer.training import evaluate, train

METRICS = ("pca", "top1", "top5")
COLUMNS = {"by-hardware": "hardware_family", "by-machine": "machine", "by-task": None}


def options(parser) -> None:
    parser.add_argument("--split", choices=sorted(COLUMNS), default="by-machine",
                        help="what is held out in turn (default: by-machine)")
    parser.add_argument("--name", help="results file name (default: bench_attention_ and the "
                                        "split, e.g. bench_attention_by_machine)")


def main() -> None:
    base = load_model_config()
    args, dataset, features = experiment(__doc__, options=options, blocks=base.blocks)
    arms = {"without": base, "with attention": base.replace(attention={"dim": 8})}
    column = COLUMNS[args.split]
    held = sorted(dataset.records[column].unique()) if column else ["30% of tasks"]
    results = {}
    for part in held:
        for seed in args.seed_list:
            split = (SplitSpec(args.split, seed=seed, family=part) if column else
                     SplitSpec(args.split, 0.3, seed))
            for arm, config in arms.items():
                model = train(dataset, config, split, seed=seed, features=features)
                report = evaluate(model, dataset, features=features)
                results[(part, seed, arm)] = report
                print(part, seed, arm, *(f"{m} {report[m]:.4f}" for m in METRICS), flush=True)
    rows = []
    for part in [*held, "all"]:
        keys = [(p, s) for p in held for s in args.seed_list if part in (p, "all")]
        for arm in [*arms, "difference"]:
            row = {"held_out": part, "arm": arm, "n": len(keys)}
            for m in METRICS:
                if arm == "difference":
                    values = [results[(p, s, "with attention")][m] - results[(p, s, "without")][m]
                              for p, s in keys]
                else:
                    values = [results[(p, s, arm)][m] for p, s in keys]
                row[m], row[f"{m}_ci"] = (round(v, 4) for v in ci95(values))
            rows.append(row)
    print()
    print_table(rows)
    name = args.name or f"bench_attention_{args.split.replace('-', '_')}"
    write_results(name, rows, dataset=args.dataset, seeds=args.seeds, split=args.split)


if __name__ == "__main__":
    main()
