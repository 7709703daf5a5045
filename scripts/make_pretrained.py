"""Train the pretrained model shipped as package data (gbxfer/data/pretrained).

    python scripts/make_pretrained.py [--seed 0]

The default model config (configs/model/default.yaml) fitted on every valid record of the
bundled dataset, all hardware profiles together; ``gbxfer.tvm.GbxferCostModel()`` loads it by
default. Its metadata names every training record, so `gbxfer evaluate` never scores it on
them (benchmarks that need held-out hardware train their own, see scripts/bench_tune.py).
"""
from __future__ import annotations

import argparse
import shutil

from gbxfer import load_bundled
from gbxfer.records.dataset import BUNDLED
from gbxfer.model import load_model_config
from gbxfer.training import train

PRETRAINED = BUNDLED.parent / "pretrained"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    dataset = load_bundled()
    model = train(dataset, load_model_config(), seed=args.seed)
    model.extra["trained_on"] = {"dataset": "bundled", "n_records": len(model.train_record_ids),
                                 "hardware": model.hardware, "seed": args.seed}
    shutil.rmtree(PRETRAINED, ignore_errors=True)
    model.save(PRETRAINED)
    size = sum(p.stat().st_size for p in PRETRAINED.rglob("*") if p.is_file()) / 2**20
    print(f"{PRETRAINED}: {len(model.train_record_ids)} records of {', '.join(model.hardware)}; "
          f"{size:.1f} MB")


if __name__ == "__main__":
    main()
