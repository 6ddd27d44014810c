"""The shapes a write works with: what a consumer holds, and what it should hold."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from allocation_ledger.domain.consumer import Consumer
from allocation_ledger.domain.provider import Provider
from allocation_ledger.domain.values import Allocations, Devices

#: Loads a live provider by UUID (raises ``ProviderNotFound``).
ProviderLoader = Callable[[str], Provider]


@dataclass(frozen=True)
class Holding:
    """What one consumer holds: its allocations and the devices behind them."""

    allocations: Allocations = field(default_factory=dict)
    devices: Devices = field(default_factory=dict)


@dataclass(frozen=True)
class Target:
    """What one consumer should hold after a write.

    ``devices`` names devices explicitly (hand-overs, or a caller's choice); for a
    (provider, class) it leaves out, the consumer keeps what it holds and takes the lowest
    free ids. ``check_units`` applies min/max/step to every record.
    """

    consumer_uuid: str
    allocations: Allocations
    devices: Devices = field(default_factory=dict)
    check_units: bool = True


#: What a consumer that holds nothing holds (shared: like every holding, only ever read).
NOTHING = Holding()


def holding(consumer: Consumer | None) -> Holding:
    """What a (possibly absent) consumer holds now."""
    if consumer is None:
        return Holding()
    return Holding(consumer.allocations, consumer.devices)
