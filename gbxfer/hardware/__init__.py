"""Hardware: the profiles measurements are taken on and the numeric descriptors the models see.

- :mod:`~gbxfer.hardware.profiles` — :class:`HardwareProfile` (``configs/hardware/*.yaml``);
- :mod:`~gbxfer.hardware.descriptor` — :class:`HardwareDescriptor` from a target and a profile;
- :mod:`~gbxfer.hardware.microarch` — CPUs through archspec: LLVM mcpu names, vector ISA,
  theoretical peak;
- :mod:`~gbxfer.hardware.probe` — measuring the machine itself (clock, peak GFLOP/s, GB/s).
"""
from . import microarch
from .descriptor import FIELDS, HardwareDescriptor, describe_hardware, fill_from_relations
from .microarch import from_mcpu, theoretical_peak_gflops
from .profiles import HardwareProfile, load_profile

__all__ = ["FIELDS", "HardwareDescriptor", "HardwareProfile", "describe_hardware",
           "fill_from_relations", "from_mcpu", "load_profile", "microarch",
           "theoretical_peak_gflops"]
