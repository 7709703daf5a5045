"""``gbxfer hardware``: probe this machine into profile YAML; show a target's descriptor."""
from __future__ import annotations

import argparse
import logging
import re

import yaml

from ..errors import GbxferError
from ..hardware.descriptor import describe_hardware
from ..hardware import microarch
from ..hardware.profiles import shipped_machine
from ..hardware.probe import ISAS, PEAK_RATIO_WARN, cpu_model, probe, supported_isas
from ._common import positive_int

log = logging.getLogger("gbxfer")


def add_parser(verbs, common):
    p = verbs.add_parser("hardware", parents=[common], help="hardware profiles",
                         description="Hardware profiles and descriptors.")
    sub = p.add_subparsers(dest="hardware_verb", metavar="VERB", required=True)
    pr = sub.add_parser("probe", parents=[common],
                        help="measure this machine and print profile YAML",
                        description="Measure the clock, peak GFLOP/s (per vector ISA and "
                                    "thread count) and memory bandwidth, read caches and cores, "
                                    "and print one profile YAML document per ISA x threads, "
                                    "with the machine (CPU model and microarchitecture) and the "
                                    "measured peak's share of the ISA's theoretical peak. Run "
                                    "it on an idle machine.")
    pr.add_argument("--isa", choices=list(ISAS),
                    help="only this ISA (default: every ISA this CPU executes)")
    pr.add_argument("--threads", type=positive_int, action="append",
                    help="thread count (repeatable; default: 1 and every core)")
    pr.add_argument("--mcpu", type=mcpu_option,
                    help="LLVM mcpu for the target (default: this CPU's own for its widest ISA, "
                         "the ISA's generic CPU for the older ones); needs --isa, and a CPU of "
                         "that ISA")
    pr.set_defaults(run=run_probe)
    sh = sub.add_parser("show", parents=[common], help="the descriptor of a target or profile",
                        description="Print the hardware descriptor derived from a TVM target "
                                    "(JSON or old string form) or a profile name, with where "
                                    "each value comes from: the target (through archspec and "
                                    "the GPU table), the profile, the microarchitecture's "
                                    "reference table (core caches, typical clock), filled from "
                                    "a relation (theoretical peak from the clock, or clock "
                                    "from the peak), or missing (NaN).")
    sh.add_argument("target", metavar="TARGET|PROFILE")
    sh.add_argument("--json", action="store_true", help="print one JSON object")
    sh.set_defaults(run=run_show)


def mcpu_option(text: str) -> str:
    """``--mcpu NAME``: an x86-64 CPU that LLVM knows (TVM's LLVM where gbxfer[tvm] works, else
    the LLVM names archspec's clang flags give: :func:`microarch.is_llvm_x86_cpu`), refused on
    one line otherwise: a profile whose target names an unknown CPU fails at its first build,
    or compiles for a generic CPU."""
    try:
        from tvm.target.codegen import llvm_is_valid_cpu

        known = bool(llvm_is_valid_cpu(text, "x86_64-unknown-linux-gnu"))
        hint = "LLVM knows for x86-64 (e.g. znver3, skylake-avx512, x86-64-v3)"
    except Exception:  # no TVM, or a TVM without LLVM: the LLVM names archspec gives
        known = microarch.is_llvm_x86_cpu(text)
        hint = "archspec knows for x86-64 (install gbxfer[tvm] to check LLVM's own list)"
    if not known:
        raise argparse.ArgumentTypeError(f"{text!r} is not a CPU {hint}")
    return text


def check_mcpu(mcpu: str, isa: str) -> None:
    """Refuse an ``mcpu`` whose widest vectors (width and FMA) are not ``isa``'s: its profile
    would describe other code than its target builds. A CPU whose vectors archspec cannot tell
    is not checked: a warning says so."""
    uarch = microarch.from_mcpu(mcpu)
    widest = microarch.vector_isa(uarch) if uarch else None
    if widest is None:
        log.warning("--mcpu %s: archspec cannot tell this CPU's vector ISA, so whether it "
                    "builds %s code is not checked", mcpu, isa)
        return
    if (ISAS[isa][1], ISAS[isa][2]) != widest:
        own = [name for name, spec in ISAS.items() if (spec[1], spec[2]) == widest]
        raise GbxferError(f"--mcpu {mcpu} builds {_vectors(*widest)} code"
                          f"{f' ({own[0]})' if own else ''}, and --isa {isa} is "
                          f"{_vectors(*ISAS[isa][1:3])}: profiles of {isa} need a CPU of that "
                          f"ISA (e.g. {ISAS[isa][3]})")


def _vectors(bits: int, fma: int) -> str:
    return f"{bits}-bit vector{' FMA' if fma else ''}"


def run_show(args) -> int:
    import json
    import math

    d = describe_hardware(args.target)
    fields = {k: (None if math.isnan(v) else v) for k, v in d.as_dict().items()}
    sources = d.source_of()
    if args.json:
        print(json.dumps({"name": d.name, "family": d.family,
                          "microarchitecture": d.microarchitecture or None, "fields": fields,
                          "sources": sources, "filled": d.filled, "missing": d.missing},
                         indent=1))
        return 0
    uarch = f", microarchitecture {d.microarchitecture}" if d.microarchitecture else ""
    print(f"{d.name} (family {d.family}{uarch})")
    for key, value in fields.items():
        print(f"  {key:22s} {'-' if value is None else f'{value:g}':>10s}  {sources[key]}")
    if d.filled:
        print(f"filled from relations: {', '.join(d.filled)}")
    if d.missing:
        print(f"missing (NaN): {', '.join(d.missing)}")
    return 0


def run_probe(args) -> int:
    import os

    isas = [args.isa] if args.isa else supported_isas()
    if not isas:
        raise GbxferError("no known vector ISA found in /proc/cpuinfo")
    if args.mcpu and not args.isa:
        raise GbxferError("--mcpu needs --isa (an ISA of that CPU): it is the target of every "
                          "profile the probe writes")
    if args.mcpu:
        check_mcpu(args.mcpu, args.isa)
    threads = args.threads or sorted({1, os.cpu_count() or 1})
    if max(threads) > (os.cpu_count() or 1):
        raise GbxferError(f"--threads {max(threads)}: this machine has {os.cpu_count()} "
                          "cores; a profile's threads must fit on it")
    texts = []
    for isa in isas:
        for n in threads:
            doc, result = profile_document(isa, n, args.mcpu,
                                           native=isa == supported_isas()[0])
            texts.append(f"# {_peak_summary(result)}\n" + yaml.safe_dump(doc, sort_keys=False,
                                                                       width=100))
            warn_if_off_peak(doc["name"], result)
    print("---\n".join(texts), end="")
    return 0


def warn_if_off_peak(name: str, result: dict) -> None:
    """A warning when the probe's peak is not near the theoretical one."""
    ratio = result["peak_ratio"]
    if ratio is not None and ratio < PEAK_RATIO_WARN:
        log.warning("%s: the measured peak is %.0f%% of the theoretical peak (below %.0f%%): "
                    "is the machine busy, or does the clock drop under vector load (%s GHz "
                    "before the kernel, %s after)?", name, 100 * ratio, 100 * PEAK_RATIO_WARN,
                    result["clock_before_ghz"], result["clock_after_ghz"])
    elif ratio is not None and ratio > 2 - PEAK_RATIO_WARN:
        log.warning("%s: the measured peak is %.0f%% of the theoretical peak: the clock was "
                    "under-read (a busy machine?) or the FP pipe table is wrong for %s", name,
                    100 * ratio, result["microarchitecture"])


def profile_document(isa: str, threads: int, mcpu: str | None = None,
                     native: bool = True) -> tuple[dict, dict]:
    """Probe ``isa`` on ``threads`` threads of this machine: the profile YAML document (named
    after the machine's microarchitecture) and the probe's result. ``native``: the target's
    mcpu is this CPU's own (else the ISA's generic CPU)."""
    import os

    result = probe(isa, threads)
    short = isa.replace('.', '').replace('-fma', '')
    family = f"x86-{short}"
    own = microarch.llvm_mcpu(microarch.host()) if native else None
    doc = {
        "name": profile_name(f"{result['generation'] or 'host'}-{short}-{threads}t",
                             result["machine"], cpu_model()),
        "family": family, "machine": result["machine"],
        "description": f"{isa} code on {threads} thread(s) of this machine "
                       f"({result['machine']}): an ISA/thread profile of one physical "
                       f"CPU. {_peak_summary(result)}",
        "target": {"kind": "llvm", "mcpu": mcpu or own or ISAS[isa][3],
                   "num-cores": os.cpu_count()},
        "threads": threads, "descriptor": result["descriptor"]}
    return doc, result


def profile_name(name: str, machine: str, model: str) -> str:
    """``name`` (generation, ISA, threads: one machine's), or, where gbxfer's own profile of
    that name is another machine's (an EPYC's where this is a Ryzen), ``name`` after this CPU's
    ``model`` (``amd-ryzen-9-7950x-zen4-avx512-1t``)."""
    other = shipped_machine(name)
    if not other or other == machine:
        return name
    return "-".join(re.findall(r"[a-z0-9]+", model.lower()) + [name])


def _peak_summary(result: dict) -> str:
    """One sentence: the probe's peak against the ISA's theoretical peak, with its formula."""
    d = result["descriptor"]
    peak = f"Probe peak {d['peak_gflops']:g} GFLOP/s"
    if result["theoretical_gflops"] is None:
        return (f"{peak}; theoretical peak unknown (clock {d['clock_ghz']} GHz; no FP pipe "
                f"table row for {result['microarchitecture']}).")
    return (f"{peak} = {result['peak_ratio']:.1%} of the theoretical "
            f"{result['theoretical_gflops']:g} GFLOP/s ({d['clock_ghz']:g} GHz measured x "
            f"{d['vector_bits'] // 32} lanes x {result['flops_per_lane_cycle']:g} flops/lane/cycle "
            f"x {d['threads']} thread(s), {result['microarchitecture']}).")
