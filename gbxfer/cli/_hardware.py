"""``gbxfer hardware``: probe this machine into profile YAML."""
from __future__ import annotations

import yaml

from ..errors import GbxferError
from ..hardware.descriptor import describe_hardware
from ..hardware.probe import ISAS, cpu_model, probe, supported_isas
from ._common import positive_int


def add_parser(verbs, common):
    p = verbs.add_parser("hardware", parents=[common], help="hardware profiles",
                         description="Hardware profiles and descriptors.")
    sub = p.add_subparsers(dest="hardware_verb", metavar="VERB", required=True)
    pr = sub.add_parser("probe", parents=[common],
                        help="measure this machine and print profile YAML",
                        description="Measure peak GFLOP/s (per vector ISA and thread count) "
                                    "and memory bandwidth, read caches, cores and clock, and "
                                    "print one profile YAML document per ISA x threads. Run it "
                                    "on an idle machine.")
    pr.add_argument("--isa", choices=list(ISAS),
                    help="only this ISA (default: every ISA this CPU executes)")
    pr.add_argument("--threads", type=positive_int, action="append",
                    help="thread count (repeatable; default: 1 and every core)")
    pr.add_argument("--mcpu", help="LLVM mcpu for the target (default: the ISA's generic CPU)")
    pr.set_defaults(run=run_probe)
    sh = sub.add_parser("show", parents=[common], help="the descriptor of a target or profile",
                        description="Print the hardware descriptor derived from a TVM target "
                                    "(JSON or old string form) or a profile name. Fields that "
                                    "cannot be derived are NaN and listed as missing.")
    sh.add_argument("target", metavar="TARGET|PROFILE")
    sh.add_argument("--json", action="store_true", help="print one JSON object")
    sh.set_defaults(run=run_show)


def run_show(args) -> int:
    import json
    import math

    d = describe_hardware(args.target)
    fields = {k: (None if math.isnan(v) else v) for k, v in d.as_dict().items()}
    if args.json:
        print(json.dumps({"name": d.name, "family": d.family, "fields": fields,
                          "missing": d.missing}, indent=1))
        return 0
    print(f"{d.name} (family {d.family})")
    for key, value in fields.items():
        print(f"  {key:22s} {'-' if value is None else f'{value:g}'}")
    if d.missing:
        print(f"missing (NaN): {', '.join(d.missing)}")
    return 0


def run_probe(args) -> int:
    import os

    isas = [args.isa] if args.isa else supported_isas()
    if not isas:
        raise GbxferError("no known vector ISA found in /proc/cpuinfo")
    threads = args.threads or sorted({1, os.cpu_count() or 1})
    docs = []
    for isa in isas:
        for n in threads:
            descriptor = probe(isa, n)
            family = f"x86-{isa.replace('.', '').replace('-fma', '')}"
            docs.append({
                "name": f"{family}-{n}t", "family": family,
                "description": f"{isa} code on {n} thread(s) of this machine ({cpu_model()}): "
                               "an ISA/thread profile of one physical CPU.",
                "target": {"kind": "llvm", "mcpu": args.mcpu or ISAS[isa][3],
                           "num-cores": os.cpu_count()},
                "threads": n, "descriptor": descriptor})
    print(yaml.safe_dump_all(docs, sort_keys=False), end="")
    return 0
