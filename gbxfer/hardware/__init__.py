"""Hardware: the profiles measurements are taken on and the numeric descriptors the models see.

- :mod:`~gbxfer.hardware.profiles` — :class:`HardwareProfile` (``configs/hardware/*.yaml``);
- :mod:`~gbxfer.hardware.descriptor` — :class:`HardwareDescriptor` from a target and a profile;
- :mod:`~gbxfer.hardware.probe` — measuring the machine itself (peak GFLOP/s, GB/s).
"""
from .descriptor import FIELDS, HardwareDescriptor, describe_hardware
from .profiles import HardwareProfile, load_profile

__all__ = ["FIELDS", "HardwareDescriptor", "HardwareProfile", "describe_hardware",
           "load_profile"]
