"""Profile names and machines: a profile may not take the name of another machine's shipped
profile, and the probe names its profile so that it does not."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gbxfer import GbxferError
from gbxfer.cli._hardware import profile_name
from gbxfer.config_files import find_config
from gbxfer.hardware import describe_hardware, load_profile, profiles


def test_a_profile_file_cannot_take_the_name_of_another_machines_profile(tmp_path,
                                                                        monkeypatch):
    monkeypatch.setattr(profiles, "_LOADED", {})  # what loads here stays here
    shipped = yaml.safe_load(Path(find_config("hardware", "zen4-avx512-1t")).read_text())
    path = tmp_path / "mine.yaml"
    for machine, refused in ((shipped["machine"], ""), ("AMD Ryzen 9 7950X (zen4)",
                                                        "is for AMD Ryzen"),
                             ("", "names no machine")):
        path.write_text(yaml.safe_dump({**shipped, "machine": machine}))
        if refused:
            with pytest.raises(GbxferError, match=f"{refused}.*a name of its own"):
                load_profile(str(path))
        else:  # the same machine's profile, edited: its own business
            assert load_profile(str(path)).machine == shipped["machine"]
    assert load_profile("zen4-avx512-1t").path == str(path)  # as loaded from the file
    # a working folder's configs/hardware overrides gbxfer's own by name: the user's choice
    monkeypatch.setattr(profiles, "_LOADED", {})
    (tmp_path / "configs" / "hardware").mkdir(parents=True)
    (tmp_path / "configs" / "hardware" / "zen4-avx512-1t.yaml").write_text(path.read_text())
    monkeypatch.chdir(tmp_path)
    assert load_profile("zen4-avx512-1t").machine == ""
    assert load_profile("configs/hardware/zen4-avx512-1t.yaml").machine == ""  # so by path
    # ... but a file of another name there may not take a shipped profile's name either
    (tmp_path / "configs" / "hardware" / "renamed.yaml").write_text(path.read_text())
    with pytest.raises(GbxferError, match="names no machine"):
        load_profile("renamed")
    for given in (str(path), "renamed"):  # said as it is, by path or by name
        with pytest.raises(GbxferError, match="names no machine") as refused:
            describe_hardware(given)
        assert "unknown hardware" not in str(refused.value)
    path.write_bytes(b"name: \xff\n")
    with pytest.raises(GbxferError, match="unreadable"):
        load_profile(str(path))


def test_the_probe_names_a_profile_after_the_cpu_model_where_another_machine_has_its_name():
    shipped = yaml.safe_load(Path(find_config("hardware", "zen4-avx512-1t")).read_text())
    assert profile_name("zen4-avx512-1t", shipped["machine"], "AMD EPYC") == "zen4-avx512-1t"
    assert (profile_name("zen4-avx512-1t", "AMD Ryzen 9 7950X 16-Core (zen4)",
                         "AMD Ryzen 9 7950X 16-Core")
            == "amd-ryzen-9-7950x-16-core-zen4-avx512-1t")
    assert profile_name("zen5-avx512-1t", "AMD EPYC (zen5)", "AMD EPYC") == "zen5-avx512-1t"
