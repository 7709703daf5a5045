"""Measure each hardware profile's descriptor on this machine and write it into its YAML.

    python scripts/probe_profiles.py [--profiles x86-avx2-1t,...]

Peak GFLOP/s and memory GB/s are measured with the profile's ISA and thread count (run on an
idle machine; 2-thread profiles need both cores). Results: scripts/results/probe_profiles.json.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import yaml
from _results import print_table, write_results

from gbxfer.hardware.probe import probe

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "hardware"
ISA_OF_FAMILY = {"x86-avx512": "avx512", "x86-avx2": "avx2-fma", "x86-avx": "avx",
                 "x86-sse42": "sse4.2"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", help="comma-separated names (default: all)")
    args = parser.parse_args()
    names = args.profiles.split(",") if args.profiles else sorted(p.stem for p in
                                                                  CONFIGS.glob("*.yaml"))
    rows = []
    for name in names:
        path = CONFIGS / f"{name}.yaml"
        doc = yaml.safe_load(path.read_text())
        probed = probe(ISA_OF_FAMILY[doc["family"]], doc["threads"])
        descriptor = probed["descriptor"]
        if doc.get("machine") not in (None, probed["machine"]):
            raise SystemExit(f"{path}: machine {doc['machine']!r}, but this is "
                             f"{probed['machine']!r}: probe a profile on its own machine")
        text = path.read_text()
        head = text[:text.index("descriptor:")]  # keep the hand-written part as it is
        path.write_text(head + yaml.safe_dump({"descriptor": descriptor}, sort_keys=False))
        rows.append({"profile": name, **descriptor, "machine": probed["machine"],
                     "theoretical_gflops": probed["theoretical_gflops"],
                     "peak_ratio": probed["peak_ratio"]})
    print_table(rows, ["profile", "vector_bits", "fma", "threads", "clock_ghz", "peak_gflops",
                       "theoretical_gflops", "peak_ratio", "mem_gbps"])
    write_results("probe_profiles", rows)


if __name__ == "__main__":
    main()
