"""Frontier backends behind one interface (:class:`archiver.frontier.base.Frontier`)."""

from archiver.frontier.base import Frontier, Lease
from archiver.frontier.local import HostScheduler
from archiver.frontier.memory import MemoryFrontier

__all__ = ["Frontier", "HostScheduler", "Lease", "MemoryFrontier"]
