"""Running cases over several devices of a host: one worker per device slot, and a device that
dies is given up while its cases finish on the others (docs/devices.md).

`--device-id 0,1,2,3` (with `--procs-per-device N`) makes N slots per device. A slot is one
worker process whose backend is bound to its device (Backend.on_device: aclrtSetDevice for
aclnn, the torch device npu:N for torch_npu); it runs one case at a time, taken from one queue
shared by every slot, so a slow device takes fewer cases. Each record says which device ran it
(Result.device).

A device is given up ("dead") when
- its backend cannot start or stops with a setup error (BackendError: aclrtSetDevice fails, the
  driver lost the device): the case it was given goes back to the queue, never ran;
- `--device-failures` of its cases in a row end in a device fault (a crash or timeout after which
  the device's state is suspect, Result.device_fault; or its worker process died); cases the
  device ran no kernel for (phase 1 refused them, skips) do not count either way. The records
  of such cases are held back until the device completes a call (status 0: then they stand, the
  case crashed a healthy device) or is given up (then the cases go back to the queue and their
  records are dropped; the new record says where the case first ran, Result.moved).

When every device is dead with cases left, the run stops with a BackendError naming each device
and why (a setup error, as for a single device that cannot start). The FleetReport says how each
device fared: the run's summary and its meta header show it.
"""

from __future__ import annotations

import dataclasses
import os
from collections import deque
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from ..judge.result import Result
from .backend import BackendError, backend_class
from .runner import POLL_S, Item, RunConfig, _init_worker, _stop_workers, run_item


@dataclass
class DeviceState:
    """One device of the run: how many cases it judged, and why it was given up (if it was)."""

    id: int
    ran: int = 0  # records it produced that stand
    faults_in_row: int = 0
    dead: str = ""  # why it was given up ('' while alive)
    moved: int = 0  # cases that went back to the queue when it was given up
    suspect: list[tuple[Item, Result]] = field(default_factory=list, repr=False)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "ran": self.ran, "alive": not self.dead}
        if self.dead:
            out.update(dead=self.dead, moved=self.moved)
        return out


@dataclass
class FleetReport:
    """How the devices of a run fared (the run's meta "devices", and its summary)."""

    devices: list[DeviceState]
    procs_per_device: int = 1

    def dead(self) -> list[DeviceState]:
        return [d for d in self.devices if d.dead]

    def to_json(self) -> dict[str, Any]:
        return {
            "procs_per_device": self.procs_per_device,
            "devices": [d.to_json() for d in self.devices],
        }

    def lines(self) -> list[str]:
        """One line per device, for the run's summary."""
        out = []
        for d in self.devices:
            if d.dead:
                out.append(
                    f"device {d.id}: given up after {d.ran} case(s): {d.dead}; "
                    f"{d.moved} case(s) moved to the other devices"
                )
            else:
                out.append(f"device {d.id}: {d.ran} case(s)")
        return out


@dataclass
class _Slot:
    device: DeviceState
    cfg: RunConfig
    pool: ProcessPoolExecutor | None = None

    def submit(self, item: Item) -> Future:
        if self.pool is None:
            self.pool = ProcessPoolExecutor(
                max_workers=1, initializer=_init_worker, initargs=(self.cfg, os.getpid())
            )
        return self.pool.submit(run_item, item)

    def stop(self, kill: bool = False) -> None:
        if self.pool is not None:
            if kill:
                _stop_workers(self.pool)
            else:
                self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


def device_config(cfg: RunConfig, device: int) -> RunConfig:
    """The run's configuration for a worker bound to `device`."""
    options = backend_class(cfg.backend).on_device(cfg.backend_options, device)
    if options is None:
        raise BackendError(f"backend {cfg.backend!r} cannot be bound to a device")
    oracle_options = cfg.oracle_options
    if cfg.oracle == cfg.backend and oracle_options is not None:
        oracle_options = options  # the backend judged by itself: the oracle on the same device
    return dataclasses.replace(
        cfg,
        backend_options=options,
        oracle_options=oracle_options,
        device=device,
        devices=(device,),
        procs_per_device=1,
        jobs=1,
    )


def _crash_record(item: Item, cfg: RunConfig, device: int, why: str) -> Result:
    return Result(
        id=item.id,
        op=item.op,
        verdict="crash",
        reason=f"the worker on device {device} died ({why}); worker restarted",
        backend=cfg.backend,
        clauses=[],
        dtypes={},
        device=device,
        device_fault=True,
    )


def execute(items: list[Item], cfg: RunConfig, sink: Callable[[Result], bool]) -> FleetReport:
    """Run `items` over the devices of `cfg` (cfg.procs_per_device workers each), handing each
    final record to `sink` (in the order they finish); stop early when sink returns False."""
    states = {d: DeviceState(d) for d in cfg.devices}
    report = FleetReport(list(states.values()), cfg.procs_per_device)
    slots = [
        _Slot(states[d], device_config(cfg, d))
        for d in cfg.devices
        for _ in range(cfg.procs_per_device)
    ]
    queue: deque[Item] = deque(items)
    moved: dict[str, dict[str, Any]] = {}  # case id -> where it first ran, and why it moved
    running: dict[Future, tuple[_Slot, Item]] = {}

    def give_up(dev: DeviceState, why: str) -> None:
        if dev.dead:
            return
        dev.dead = why
        for item, _ in reversed(dev.suspect):  # their records are dropped: judged again
            queue.appendleft(item)
            moved[item.id] = {"from": dev.id, "why": why}
            dev.moved += 1
        dev.suspect.clear()

    def deliver(dev: DeviceState, item: Item, rec: Result) -> bool:
        if item.id in moved and rec.moved is None:
            rec.moved = moved[item.id]
        dev.ran += 1
        return sink(rec)

    def handle(slot: _Slot, item: Item, fut: Future) -> bool:
        dev = slot.device
        try:
            rec = fut.result()
        except BackendError as exc:  # the device cannot run cases
            slot.stop(kill=True)
            give_up(dev, str(exc))
            queue.appendleft(item)  # it never ran: another device takes it
            moved.setdefault(item.id, {"from": dev.id, "why": str(exc)})
            dev.moved += 1
            return True
        except BrokenProcessPool as exc:  # the worker itself died (a backend not isolated)
            slot.stop(kill=True)
            rec = _crash_record(item, cfg, dev.id, str(exc) or "process pool broken")
        if dev.dead:  # a case in flight when its device was given up: it still ran
            return deliver(dev, item, rec)
        if rec.device_fault:
            dev.faults_in_row += 1
            dev.suspect.append((item, rec))
            if dev.faults_in_row >= cfg.device_failures:
                give_up(
                    dev,
                    f"{dev.faults_in_row} device faults in a row (last: {rec.verdict}: "
                    f"{(rec.reason or '')[:200]})",
                )
            return True
        if rec.actual_status != 0:  # the device ran no kernel (phase 1 refused, a skip):
            return deliver(dev, item, rec)  # it says nothing of the device's health
        dev.faults_in_row = 0
        held, dev.suspect = dev.suspect, []
        for h_item, h_rec in held:  # the device is healthy: the crashes were the cases'
            if not deliver(dev, h_item, h_rec):
                return False
        return deliver(dev, item, rec)

    try:
        while queue or running:
            busy = {id(s) for s, _ in running.values()}
            for slot in slots:
                if not queue:
                    break
                if slot.device.dead or id(slot) in busy:
                    continue
                item = queue.popleft()
                running[slot.submit(item)] = (slot, item)
            if not running:  # cases left, and no device to run them
                why = "; ".join(f"device {d.id}: {d.dead}" for d in report.devices)
                raise BackendError(
                    f"every device was given up with {len(queue)} case(s) left ({why})"
                )
            done, _ = wait(list(running), timeout=POLL_S, return_when=FIRST_COMPLETED)
            for fut in done:
                slot, item = running.pop(fut)
                if not handle(slot, item, fut):
                    for s in slots:
                        s.stop(kill=True)
                    return report
            busy = {id(s) for s, _ in running.values()}
            for s in slots:  # the idle workers of a device given up: their processes end now
                if s.device.dead and s.pool is not None and id(s) not in busy:
                    s.stop()
        for dev in report.devices:  # the last cases of a device: nothing came after them
            held, dev.suspect = dev.suspect, []
            for h_item, h_rec in held:
                if not deliver(dev, h_item, h_rec):
                    break
    except BaseException:  # Ctrl-C, a sink failing, every device dead: stop every worker now
        for s in slots:
            s.stop(kill=True)
        raise
    for s in slots:
        s.stop()
    return report
