"""Train/test splits as deterministic functions of keys and a seed.

Each key (program id, task key or network name) is hashed with the seed to a number in [0, 1);
keys below ``test_fraction`` are test. A split therefore selects the same test programs or tasks
on a pruned or merged dataset, and the test share is ``test_fraction`` in expectation, not
exactly. A by-hardware split holds out one whole hardware family, a by-machine split every
profile of one physical machine; the same program may then be in train on other hardware (paired
data), and :func:`paired_test_mask` tells which.
"""
from __future__ import annotations

import dataclasses
import hashlib

import numpy as np

from .errors import GbxferError
from .records.columns import isin

KINDS = ("within-task", "by-task", "by-network", "by-hardware", "by-machine")
HELD_OUT = {"by-hardware": ("hardware_family", "hardware family"),
            "by-machine": ("machine", "machine")}  # kind -> (records column, what it is)


def key_uniform(keys, seed: int) -> np.ndarray:
    """A number in [0, 1) per key, a deterministic function of (key, seed)."""
    salt = f"{int(seed)}\x00".encode()
    cache: dict = {}
    out = np.empty(len(keys))
    for i, key in enumerate(keys):
        u = cache.get(key)
        if u is None:
            digest = hashlib.blake2b(salt + str(key).encode(), digest_size=8).digest()
            u = cache[key] = int.from_bytes(digest, "big") / 2.0**64
        out[i] = u
    return out


@dataclasses.dataclass(frozen=True)
class SplitSpec:
    """How to hold out test data.

    Parameters
    ----------
    kind : {"within-task", "by-task", "by-network", "by-hardware", "by-machine"}
        within-task holds out program ids (on every profile), by-task whole tasks, by-network
        the tasks of whole networks, by-hardware one hardware family, by-machine every profile
        of one physical machine.
    test_fraction : float
        Expected share of test keys (not used by by-hardware and by-machine).
    seed : int
    family : str, optional
        The held-out hardware family (by-hardware) or machine (by-machine).
    """

    kind: str
    test_fraction: float = 0.2
    seed: int = 0
    family: str | None = None

    def __post_init__(self):
        if self.kind not in KINDS:
            raise GbxferError(f"unknown split kind {self.kind!r}; expected one of {', '.join(KINDS)}")
        if self.kind in HELD_OUT and not self.family:
            what = HELD_OUT[self.kind][1].split()[-1].upper()
            raise GbxferError(f"a {self.kind} split needs a {what.lower()}: {self.kind}:{what}")
        if self.kind not in HELD_OUT and not 0.0 < self.test_fraction < 1.0:
            raise GbxferError(f"test fraction must be in (0, 1), got {self.test_fraction}")

    @classmethod
    def parse(cls, text: str, test_fraction: float = 0.2, seed: int = 0) -> "SplitSpec":
        """From the CLI spelling: ``within-task``, ``by-task``, ``by-network``,
        ``by-hardware:FAMILY``, ``by-machine:MACHINE``."""
        kind, _, family = text.partition(":")
        return cls(kind, test_fraction, seed, family or None)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "SplitSpec":
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})

    def test_mask(self, dataset) -> np.ndarray:
        """Boolean mask over ``dataset.records``: True for test records."""
        records = dataset.records
        if self.kind == "within-task":
            return key_uniform(records["program_id"].to_numpy(), self.seed) < self.test_fraction
        if self.kind == "by-task":
            return key_uniform(records["task_key"].to_numpy(), self.seed) < self.test_fraction
        if self.kind in HELD_OUT:
            column, what = HELD_OUT[self.kind]
            mask = (records[column] == self.family).to_numpy()
            if not mask.any():
                names = ", ".join(repr(n) for n in sorted(records[column].unique()))
                raise GbxferError(f"no records of {what} {self.family!r}; in the dataset: "
                                  f"{names}")
            return mask
        networks = task_networks(dataset)
        missing = sorted({t for t in records["task_key"].unique() if not networks.get(t)})
        if missing:
            raise GbxferError(f"a by-network split needs each task's network; {len(missing)} "
                              f"tasks have none (first: {missing[0][:60]})")
        test_tasks = {task for task, names in networks.items() if any(
            key_uniform([n], self.seed)[0] < self.test_fraction for n in names)}
        return records["task_key"].isin(test_tasks).to_numpy()


def paired_test_mask(dataset, test_mask, among=None) -> np.ndarray:
    """True for test records whose program is also measured in the train part (on other
    hardware); ``among`` (a mask, default all records) restricts which records count."""
    test = np.asarray(test_mask)
    among = np.ones(len(test), dtype=bool) if among is None else np.asarray(among)
    program_ids = dataset.records["program_id"]
    train_programs = set(program_ids[among & ~test])
    return among & test & isin(program_ids, train_programs)


def leave_one_network_out(dataset) -> dict[str, np.ndarray]:
    """``{network: test mask}`` over ``dataset.records``, one per network of its tasks: the
    records of every task of that network (those it shares with another network too)."""
    of_task = task_networks(dataset)
    task = dataset.records["task_key"]
    if not any(of_task.get(t) for t in task.unique()):
        raise GbxferError("leave one network out needs each task's network; the tasks have none")
    return {n: task.map(lambda t, n=n: n in of_task.get(t, ())).to_numpy(dtype=bool)
            for n in sorted(set().union(*of_task.values()))}


def task_networks(dataset) -> dict[str, set[str]]:
    """``{task key: the networks it belongs to}`` from the task table's comma-separated
    ``network`` column (an empty set where it is unknown)."""
    return {t: set(str(n or "").split(",")) - {""}
            for t, n in zip(dataset.tasks["task_key"], dataset.tasks["network"])}
