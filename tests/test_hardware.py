"""Hardware descriptors from targets, profiles and old log strings; NaN where nothing is known."""
from __future__ import annotations

import json
import math

import pytest

from gbxfer import GbxferError
from gbxfer.cli import main
from gbxfer.hardware import FIELDS, HardwareDescriptor, describe_hardware


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
