"""Hardware descriptors from targets, profiles and old log strings; NaN where nothing is known."""
from __future__ import annotations

import json
import math
import platform
import re
import shutil

import archspec.cpu
import pytest

from gbxfer import GbxferError
from gbxfer.cli import main
from gbxfer.hardware import FIELDS, HardwareDescriptor, describe_hardware, microarch
from gbxfer.hardware.probe import (
    CHAINS,
    SEPARATE_CHAINS,
    chain_counts,
    host_machine,
    kernel_asm,
    measure_clock_ghz,
    probe,
    supported_isas,
)


def test_a100_from_an_old_ansor_target_string():
    d = describe_hardware("cuda -keys=cuda,gpu -arch=sm_80 -max_num_threads=1024 "
                          "-thread_warp_size=32")
    v = d.as_dict()
    assert (d.name, d.family) == ("cuda-sm_80", "cuda-sm_80")
    assert v["is_gpu"] == 1 and v["cores"] == 108 and v["compute_capability"] == 8.0
    assert v["warp_size"] == 32 and v["vector_bits"] == 0  # not applicable to a GPU


def test_partial_cpu_target_leaves_unknown_fields_nan():
    d = describe_hardware("llvm -keys=cpu")
    assert d.family == "llvm-generic"
    assert math.isnan(d.as_dict()["cores"]) and "peak_gflops" in d.missing
    assert d.as_dict()["shared_mem_kb"] == 0  # a CPU has none: known, not missing


def test_json_target_gives_isa_and_cores():
    v = HardwareDescriptor.from_target({"kind": "llvm", "mcpu": "sandybridge",
                                        "num-cores": 4}).as_dict()
    assert (v["vector_bits"], v["fma"], v["cores"]) == (256, 0, 4)


def test_profile_descriptor_overrides_the_table():
    d = describe_hardware("x86-sse42-1t")
    v = d.as_dict()
    assert d.family == "x86-sse42" and v["vector_bits"] == 128 and v["threads"] == 1
    assert v["peak_gflops"] > 0


def test_thread_variants_differ_only_where_threads_matter():
    one, two = describe_hardware("x86-avx2-1t").as_dict(), describe_hardware(
        "x86-avx2-2t").as_dict()
    assert one["vector_bits"] == two["vector_bits"] and one["threads"] != two["threads"]


def test_unknown_override_field_is_an_error():
    with pytest.raises(GbxferError, match="unknown descriptor field 'flux'"):
        HardwareDescriptor.from_target({"kind": "llvm"}, overrides={"flux": 1})


def test_unknown_name_lists_the_fields_to_provide(capsys):
    assert main(["hardware", "show", "pdp-11"]) == 2
    err = capsys.readouterr().err
    assert all(f in err for f in FIELDS) and "configs/hardware" in err


def test_show_json(capsys):
    assert main(["hardware", "show", "cuda -arch=sm_86", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["family"] == "cuda-sm_86" and out["fields"]["cores"] == 68


# CPUs through archspec: LLVM mcpu names, vector ISA, theoretical peak

@pytest.mark.parametrize("mcpu, uarch", [
    ("znver3", "zen3"), ("znver4", "zen4"), ("skylake-avx512", "skylake_avx512"),
    ("sapphirerapids", "sapphirerapids"), ("haswell", "haswell"), ("x86-64-v3", "x86_64_v3"),
    ("neoverse-n1", "neoverse_n1"), ("x86-64", "x86_64"), ("icelake-server", "icelake")])
def test_llvm_mcpu_names_map_to_archspec_microarchitectures(mcpu, uarch):
    assert microarch.from_mcpu(mcpu).name == uarch


def test_an_mcpu_archspec_does_not_know_maps_to_nothing():
    assert microarch.from_mcpu("pdp-11") is None and microarch.from_mcpu(None) is None


@pytest.mark.parametrize("target, isa", [
    ({"kind": "llvm", "mcpu": "znver3"}, (256, 1)),
    ({"kind": "llvm", "mcpu": "skylake-avx512"}, (512, 1)),
    ({"kind": "llvm", "mcpu": "nehalem"}, (128, 0)),
    ({"kind": "llvm", "mcpu": "neoverse-n1"}, (128, 1)),
    ({"kind": "llvm"}, (128, 0)),  # no mcpu: TVM's llvm emits SSE code
    ({"kind": "llvm", "mcpu": "nehalem", "mattr": ["+avx2", "+fma"]}, (256, 1))])
def test_vector_isa_comes_from_archspec_features_and_mattr(target, isa):
    v = HardwareDescriptor.from_target(target).as_dict()
    assert (v["vector_bits"], v["fma"]) == isa


@pytest.mark.parametrize("uarch, bits, fma, clock, threads, gflops", [
    ("zen3", 256, 1, 3.0, 1, 96.0),            # 8 lanes x 2 FMA pipes x 2
    ("zen3", 128, 0, 3.0, 1, 48.0),            # 4 lanes x (2 mul + 2 add pipes)
    ("zen4", 512, 1, 3.0, 1, 96.0),            # double-pumped: one 512-bit FMA per cycle
    ("skylake_avx512", 512, 1, 2.0, 2, 256.0),  # 16 lanes x 2 FMA units x 2 x 2 threads
    ("cascadelake", 512, 1, 2.0, 1, 128.0),    # a descendant uses skylake_avx512's row
    ("haswell", 256, 0, 3.0, 1, 48.0),         # mul and add share ports 0/1: 2 ops a cycle
    ("sandybridge", 256, 0, 3.0, 1, 48.0)])    # one mul port, one add port
def test_theoretical_peak_is_clock_times_lanes_times_flops_per_lane(uarch, bits, fma, clock,
                                                                     threads, gflops):
    assert microarch.theoretical_peak_gflops(uarch, bits, fma, clock, threads) == gflops


def test_theoretical_peak_is_nan_without_a_pipe_table_row():
    assert math.isnan(microarch.theoretical_peak_gflops("x86_64_v3", 256, 1, 3.0, 1))
    assert math.isnan(microarch.theoretical_peak_gflops("zen3", 512, 1, 3.0, 1))  # no AVX-512


ZEN3 = {"kind": "llvm", "mcpu": "znver3", "num-cores": 2}


def test_descriptor_fills_the_peak_from_a_known_clock():
    d = HardwareDescriptor.from_target(ZEN3, overrides={"threads": 1, "clock_ghz": 3.0})
    assert d.as_dict()["peak_gflops"] == 96.0
    assert d.source_of()["peak_gflops"] == "filled" and d.source_of()["clock_ghz"] == "profile"
    assert d.filled == ["peak_gflops"] and d.microarchitecture == "zen3"


def test_descriptor_fills_the_clock_from_a_known_peak():
    d = HardwareDescriptor.from_target(ZEN3, overrides={"threads": 2, "peak_gflops": 192.0})
    assert d.as_dict()["clock_ghz"] == 3.0 and d.filled == ["clock_ghz"]


def test_descriptor_keeps_a_given_peak_and_clock_as_they_are():
    d = HardwareDescriptor.from_target(ZEN3, overrides={"threads": 1, "clock_ghz": 2.445,
                                                        "peak_gflops": 102.0})
    assert (d.as_dict()["clock_ghz"], d.as_dict()["peak_gflops"]) == (2.445, 102.0)
    assert d.filled == []


def test_an_older_isa_on_a_newer_machine_uses_the_machines_pipes():
    nehalem = {"kind": "llvm", "mcpu": "nehalem", "num-cores": 2}
    on_zen3 = HardwareDescriptor.from_target(nehalem, overrides={"threads": 1, "clock_ghz": 3.0},
                                             machine="AMD EPYC (zen3)")
    on_nehalem = HardwareDescriptor.from_target(nehalem, overrides={"threads": 1,
                                                                    "clock_ghz": 3.0})
    assert on_zen3.as_dict()["vector_bits"] == 128 and on_zen3.microarchitecture == "zen3"
    assert on_zen3.as_dict()["peak_gflops"] == 48.0  # Zen 3: 2 mul + 2 add pipes
    assert on_nehalem.as_dict()["peak_gflops"] == 24.0  # Nehalem: 1 mul + 1 add port


def test_a_target_known_by_name_gets_the_reference_table_and_the_relations():
    d = HardwareDescriptor.from_target(ZEN3)  # znver3, 2 cores: no probe, no profile
    v, source = d.as_dict(), d.source_of()
    assert (v["l1d_kb"], v["l2_kb"], v["clock_ghz"]) == (32, 512, 3.3)
    assert source["clock_ghz"] == source["l2_kb"] == "table"
    assert v["peak_gflops"] == pytest.approx(3.3 * 8 * 4 * 2) and d.filled == ["peak_gflops"]
    assert {"l3_kb", "mem_gbps"} <= set(d.missing)  # the part's, not the core's: unknown
    probed = HardwareDescriptor.from_target(ZEN3, overrides={"threads": 1, "peak_gflops": 100.0})
    assert probed.as_dict()["clock_ghz"] == pytest.approx(100 / 32, abs=1e-3)  # measured wins
    assert probed.source_of()["clock_ghz"] == "filled"


def test_descriptor_guesses_nothing_without_a_clock_or_a_pipe_table_row():
    assert "peak_gflops" in HardwareDescriptor.from_target({"kind": "llvm",
                                                            "mcpu": "x86-64-v3"}).missing
    d = HardwareDescriptor.from_target({"kind": "llvm", "mcpu": "x86-64-v3"},
                                       overrides={"threads": 1, "clock_ghz": 3.0})
    assert "peak_gflops" in d.missing and d.filled == []


def test_descriptor_fields_stay_the_columns_saved_models_use():
    assert FIELDS == ("is_gpu", "vector_bits", "fma", "cores", "threads", "l1d_kb", "l2_kb",
                      "l3_kb", "clock_ghz", "peak_gflops", "mem_gbps", "shared_mem_kb",
                      "registers_per_block", "warp_size", "compute_capability")


@pytest.fixture
def clock_only_profile(tmp_path):
    path = tmp_path / "zen3-clock-1t.yaml"
    path.write_text("name: zen3-clock-1t\nfamily: x86-avx2\nmachine: AMD EPYC (zen3)\n"
                    "target: {kind: llvm, mcpu: znver3, num-cores: 2}\nthreads: 1\n"
                    "descriptor: {clock_ghz: 3.0}\n")
    return str(path)


def test_show_says_which_fields_were_filled(clock_only_profile, capsys):
    assert main(["hardware", "show", clock_only_profile]) == 0
    out = capsys.readouterr().out
    assert "microarchitecture zen3" in out and "filled from relations: peak_gflops" in out
    assert any(line.split() == ["peak_gflops", "96", "filled"] for line in out.splitlines())


def test_show_json_gives_each_field_its_source(clock_only_profile, capsys):
    assert main(["hardware", "show", clock_only_profile, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sources"]["peak_gflops"] == "filled" and out["fields"]["peak_gflops"] == 96.0
    assert out["sources"]["clock_ghz"] == "profile" and out["sources"]["l2_kb"] == "table"
    assert out["sources"]["l3_kb"] == "missing"
    assert out["filled"] == ["peak_gflops"] and out["microarchitecture"] == "zen3"


# The probe: its kernel, the clock, the machine

needs_x86_compiler = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not shutil.which("cc"),
    reason="the probe's ISAs are x86 and it needs a C compiler")


def _hot_loop(asm: str, op: str) -> list[str]:
    """The instructions of the loop that holds the first ``op``: from the label before it to
    the jump back to that label."""
    lines = asm.splitlines()
    first = next(i for i, line in enumerate(lines) if op in line)
    start = max(i for i in range(first) if re.match(r"^\.?L\w+:", lines[i]))
    label = lines[start].rstrip(":")
    end = next(i for i in range(first, len(lines)) if re.search(rf"\bj\w+\s+{label}$", lines[i]))
    return lines[start + 1:end]


@needs_x86_compiler
@pytest.mark.parametrize("isa, op, chains", [
    ("avx512", "vfmadd", CHAINS[512]), ("avx2-fma", "vfmadd", CHAINS[256]),
    *((isa, op, n) for isa, op in [("avx", "vmulps"), ("sse4.2", "mulps")]
      for n in SEPARATE_CHAINS)])
def test_probe_kernel_loop_is_all_chains_in_registers(isa, op, chains):
    assert chains in chain_counts(isa)
    try:
        asm = kernel_asm(isa, chains)
    except GbxferError as exc:  # a compiler without this ISA (the CPU need not have it)
        pytest.skip(str(exc))
    loop = _hot_loop(asm, op)
    assert chains >= 8  # FMA: latency 4 x 2 pipes; separate: 2 x (latency 3 x 2 pipes) on Zen
    assert not [line for line in loop if "%rsp" in line or "%rbp" in line]  # no spills
    if op == "vfmadd":
        assert sum(op in line for line in loop) == chains
    else:  # no FMA where the ISA has none: independent multiply chains and add chains
        assert not [line for line in loop if "fmadd" in line]
        assert sum(op in line for line in loop) == chains // 2
        assert sum(re.search(r"\badd[ps]s\b|\bvaddps\b", line) is not None
                   for line in loop) == chains // 2


@needs_x86_compiler
def test_a_short_clock_measurement_is_a_plausible_clock():
    assert 0.5 < measure_clock_ghz(adds=1_000_000, repeats=3) < 7


def test_host_machine_is_the_cpu_model_and_its_microarchitecture():
    machine = host_machine()
    assert microarch.from_machine(machine) == microarch.host() and len(machine) > len(
        microarch.host().name) + 3


def test_generations_archspec_folds_together_keep_names_of_their_own():
    spr = microarch.target("sapphirerapids")
    assert microarch.generation(spr, "GenuineIntel", 6, 207) == "emeraldrapids"
    assert microarch.generation(spr, "GenuineIntel", 6, 143) == "sapphirerapids"
    assert microarch.generation(microarch.target("zen4"), "GenuineIntel", 6, 207) == "zen4"
    assert microarch.generation(spr, "AuthenticAMD", 6, 207) == "sapphirerapids"
    assert microarch.from_machine("Intel Xeon (emeraldrapids)") == spr
    assert microarch.from_machine("Intel Xeon (pdp11)") is None


@needs_x86_compiler
def test_probe_returns_descriptor_fields_apart_from_what_it_says_of_them():
    isa = supported_isas()[-1]
    result = probe(isa, 1, seconds=0.02, repeats=1, stream_mb=4)
    assert set(result["descriptor"]) <= set(FIELDS) and result["descriptor"]["clock_ghz"] > 0.5
    HardwareDescriptor.from_target({"kind": "llvm"}, overrides=result["descriptor"])
    assert result["machine"] == host_machine()
    if result["theoretical_gflops"] is not None:  # a CPU of the FP pipe table
        assert result["peak_ratio"] == pytest.approx(
            result["descriptor"]["peak_gflops"] / result["theoretical_gflops"], rel=0.01)


def test_probe_prints_a_profile_of_this_machine_that_loads(tmp_path, capsys):
    import yaml

    from gbxfer.hardware import load_profile
    from gbxfer.hardware.probe import host_machine
    assert main(["hardware", "probe", "--isa", "sse4.2", "--threads", "1"]) == 0
    text = capsys.readouterr().out
    assert "of the theoretical" in text
    doc = yaml.safe_load(text)
    uarch = host_machine().rsplit("(", 1)[1].rstrip(")")
    assert doc["name"] == f"{uarch}-sse42-1t" and doc["machine"] == host_machine()
    path = tmp_path / "p.yaml"
    path.write_text(text)
    profile = load_profile(str(path))
    assert profile.machine == host_machine() and profile.descriptor["peak_gflops"] > 0
    d = describe_hardware(str(path))
    assert d.microarchitecture == microarch.from_machine(host_machine()).name and not d.missing


def test_a_profile_loaded_from_a_path_gives_records_their_descriptor_by_name(tmp_path):
    from gbxfer.features import hardware_descriptor
    from gbxfer.hardware import load_profile

    path = tmp_path / "p.yaml"
    path.write_text("name: pathonly-1t\nfamily: x86-avx2\nmachine: AMD EPYC (zen3)\n"
                    "target: {kind: llvm, mcpu: znver3, num-cores: 64}\nthreads: 1\n"
                    "descriptor: {peak_gflops: 101.5, clock_ghz: 3.2}\n")
    load_profile(str(path))  # as calibrate, collect and tune load --hardware FILE.yaml
    v = hardware_descriptor("pathonly-1t", "x86-avx2", "{}").as_dict()
    assert v["peak_gflops"] == 101.5 and v["threads"] == 1  # not 64 cores' theoretical peak
    assert load_profile("pathonly-1t").path == str(path)


def test_a_guest_with_masked_features_reads_as_its_microarchitecture():
    """A KVM guest of a Zen 4 host lacks pku and flush_l1d, so archspec calls it x86_64_v4;
    the nearest target of its vendor lacking only such features is zen4, not zen5."""
    targets = archspec.cpu.TARGETS
    guest = set(targets["zen4"].features) - {"pku", "flush_l1d"}
    assert microarch.nearest_target(targets["x86_64_v4"], "AuthenticAMD", guest) is \
        targets["zen4"]


def test_a_guest_missing_a_real_feature_stays_at_its_isa_level():
    """Without a feature no hypervisor masks, the guest is no Zen 4 — and not a Zen 3 either,
    which is below the x86_64_v4 archspec found (its native target would lose AVX-512)."""
    targets = archspec.cpu.TARGETS
    guest = set(targets["zen4"].features) - {"pku", "flush_l1d", "avx512_bf16"}
    assert microarch.nearest_target(targets["x86_64_v4"], "AuthenticAMD", guest) is \
        targets["x86_64_v4"]


def test_another_vendors_features_give_no_amd_target():
    targets = archspec.cpu.TARGETS
    guest = set(targets["zen4"].features) - {"pku", "flush_l1d"}
    assert microarch.nearest_target(targets["x86_64_v4"], "GenuineIntel", guest) is not \
        targets["zen4"]


def test_a_guest_past_a_specific_answer_reads_as_its_microarchitecture():
    """A KVM guest of a Sapphire Rapids lacks waitpkg, so archspec calls it icelake; the
    nearest target descending from icelake lacking only masked features is sapphirerapids."""
    targets = archspec.cpu.TARGETS
    guest = set(targets["sapphirerapids"].features) - {"waitpkg"}
    assert microarch.nearest_target(targets["icelake"], "GenuineIntel", guest) is \
        targets["sapphirerapids"]
    assert microarch.nearest_target(targets["icelake"], "GenuineIntel",
                                    guest - {"amx_tile"}) is targets["icelake"]


def test_cpu_model_names_drop_trademarks_and_filler_words():
    from gbxfer.hardware.probe import _plain_model
    assert _plain_model("Intel(R) Xeon(R) Processor") == "Intel Xeon"
    assert _plain_model("AMD EPYC 9654 96-Core Processor") == "AMD EPYC 9654 96-Core"
    assert _plain_model("Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz") == "Intel Core i7-8700 @ 3.20GHz"
    assert _plain_model("Processor") == "Processor"
