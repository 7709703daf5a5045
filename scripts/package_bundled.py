"""Copy collected datasets into the package as the bundled dataset (gbxfer/data/bundled).

    python scripts/package_bundled.py --from COLLECT_DIR/dataset [--from ...] [--add]

``--add`` keeps the records the bundled dataset already has (a new machine's collection is
added beside them; a profile name already there on another machine is refused).
Keeps every record and the collection commands of its manifest, adds the measured noise
(scripts/results/noise.json) when present, computes the per-store features (TVM; reusing those
the bundled dataset already has) and checks the 30 MB limit.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from gbxfer import Dataset, load_dataset
from gbxfer.records.dataset import BUNDLED

LIMIT_MB = 30
NOISE = Path(__file__).resolve().parent / "results" / "noise.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="sources", required=True, action="append")
    parser.add_argument("--add", action="store_true",
                        help="keep the bundled dataset's records beside the new ones")
    args = parser.parse_args()
    parts = [load_dataset(s) for s in args.sources]
    if args.add:
        parts.insert(0, load_dataset("bundled"))
    ds = Dataset.concat(parts)
    ds.manifest["description"] = (
        "Programs of the 'networks' suite (ResNet-50, MobileNet-V2, BERT-base, ResNet-18) "
        "collected with `gbxfer collect` on ISA/thread profiles of the machines "
        f"{', '.join(ds.machines)} (2-vCPU virtual machines): see configs/hardware. "
        "Latency = median of 3 timed repeats.")
    if NOISE.exists():
        ds.manifest["noise"] = json.loads(NOISE.read_text())
    from gbxfer.tvm import per_store_features

    shipped = load_dataset("bundled").per_store if (BUNDLED / "manifest.json").exists() else None
    ds.per_store = per_store_features(ds, precomputed=shipped)
    ds.save(BUNDLED)
    size = sum(p.stat().st_size for p in BUNDLED.iterdir()) / 2**20
    print(f"{BUNDLED}: {len(ds)} records, {size:.1f} MB")
    if size > LIMIT_MB:
        raise SystemExit(f"bundled dataset is {size:.1f} MB, over the {LIMIT_MB} MB limit")


if __name__ == "__main__":
    main()
