"""Runs over several devices (issue 28, point 4; docs/devices.md), on the aclnn TEST DOUBLE.

The double has 8 fake devices; ACLNN_TEST_DOUBLE_LAUNCH_LOG makes it write one line per kernel
launch naming the device it ran on (from the stream's device: what aclrtSetDevice made current
in the worker), ACLNN_TEST_DOUBLE_DEAD_DEVICES makes aclrtSetDevice of a device fail (a lost
device), ACLNN_TEST_DOUBLE_FAULTY_DEVICES makes every kernel on a device fault. Expected
values come from those injections, never from the run's own output.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest
from aclnn_conformance.conformance.judge.result import Result
from aclnn_conformance.conformance.run import config
from aclnn_conformance.conformance.run.backends.aclnn_backend import AclnnBackend
from aclnn_conformance.conformance.run.backends.torch_backend import TorchNpuBackend
from aclnn_conformance.conformance.run.session import PYTEST, Session
from aclnn_conformance.conformance.spec.registry import default_registry

from tests.support.runcli import assert_clean, assert_one_line_error, conform, read_jsonl

pytest_plugins = ["tests.aclnn_double.fixtures"]  # lib_dir, double_root

# positive cases only (each launches exactly one kernel): a device gets a kernel with its first
POSITIVE = [
    "--op",
    "leaky_relu_backward",
    "--product",
    "atlas-a2",
    "-k",
    "/f32/selfIsResult=0/point=x-",
]


def run(tmp_path: Path, lib_dir: Path, *args: str, env: dict[str, str] | None = None):
    results = tmp_path / "r.jsonl"
    proc = conform("run", "--backend", "aclnn", "--lib-dir", lib_dir, *POSITIVE, "--results",
                   results, "-q", *args, env={**os.environ, **(env or {})}, timeout=300)  # fmt: skip
    return proc, results


def launches(log: Path) -> Counter:
    return Counter(
        int(line.split()[0].removeprefix("device=")) for line in log.read_text().splitlines()
    )


def meta_devices(results: Path) -> dict:
    return json.loads(Path(str(results) + ".meta.json").read_text())["devices"]


@pytest.mark.gates
def test_cases_spread_over_the_devices_and_each_record_names_the_device_that_ran_it(
    tmp_path, lib_dir
):
    log = tmp_path / "launch.log"
    proc, results = run(tmp_path, lib_dir, "--device-id", "1,3", "--procs-per-device", "2",
                        env={"ACLNN_TEST_DOUBLE_LAUNCH_LOG": str(log)})  # fmt: skip
    assert_clean(proc, 0)
    recs = read_jsonl(results)
    assert recs and all(r["verdict"] == "pass" for r in recs)
    per_record = Counter(r["device"] for r in recs)
    # every kernel launch happened on the device its record names: the id reached the library
    assert launches(log) == per_record
    assert set(per_record) == {1, 3}  # each of the 4 slots was given a case at the start
    meta = meta_devices(results)
    assert meta["procs_per_device"] == 2
    assert {d["id"]: d["ran"] for d in meta["devices"]} == dict(per_record)
    assert all(d["alive"] for d in meta["devices"])


@pytest.mark.gates
def test_a_device_that_cannot_start_is_given_up_and_its_cases_finish_on_the_others(
    tmp_path, lib_dir
):
    log = tmp_path / "launch.log"
    env = {"ACLNN_TEST_DOUBLE_LAUNCH_LOG": str(log), "ACLNN_TEST_DOUBLE_DEAD_DEVICES": "1"}
    proc, results = run(tmp_path, lib_dir, "--device-id", "0,1", env=env)
    assert_clean(proc, 0)
    recs = read_jsonl(results)
    planned = [ln for ln in conform("cases", "list", *POSITIVE).stdout.splitlines() if "/" in ln]
    assert sorted(r["id"] for r in recs) == sorted(planned)  # every case ran, once
    assert all(r["verdict"] == "pass" and r["device"] == 0 for r in recs)
    assert set(launches(log)) == {0}
    moved = [r for r in recs if r.get("moved")]
    assert len(moved) == 1 and moved[0]["moved"]["from"] == 1  # the case device 1 was given
    assert "device 1 is lost" in moved[0]["moved"]["why"]
    dead = {d["id"]: d for d in meta_devices(results)["devices"]}
    assert not dead[1]["alive"] and "device 1 is lost" in dead[1]["dead"] and dead[1]["ran"] == 0
    assert "warning: device 1 was given up" in proc.stderr


@pytest.mark.gates
def test_a_device_whose_kernels_fault_is_given_up_after_failures_in_a_row(tmp_path, lib_dir):
    env = {"ACLNN_TEST_DOUBLE_FAULTY_DEVICES": "2"}
    proc, results = run(tmp_path, lib_dir, "--device-id", "2,3", "--device-failures", "1", env=env)
    assert_clean(proc, 0)
    recs = read_jsonl(results)
    # the crash on device 2 was held back, and the case judged again on device 3
    assert all(r["verdict"] == "pass" and r["device"] == 3 for r in recs)
    moved = [r for r in recs if r.get("moved")]
    assert [m["moved"]["from"] for m in moved] == [2]
    assert "1 device faults in a row" in moved[0]["moved"]["why"]
    assert "AI Core exception on device 2" in moved[0]["moved"]["why"]


@pytest.mark.gates
def test_a_worker_that_dies_without_isolation_counts_as_a_device_fault(tmp_path, lib_dir):
    """--no-isolate: the kernel on device 3 aborts the worker process itself (its process pool
    breaks); that case is a device fault of device 3, which is given up, and runs on 2."""
    env = {"ACLNN_TEST_DOUBLE_ABORT_DEVICES": "3"}
    proc, results = run(tmp_path, lib_dir, "--device-id", "2,3", "--no-isolate",
                        "--device-failures", "1", env=env)  # fmt: skip
    assert_clean(proc, 0)
    recs = read_jsonl(results)
    assert all(r["verdict"] == "pass" and r["device"] == 2 for r in recs)
    moved = [r["moved"] for r in recs if r.get("moved")]
    assert len(moved) == 1 and moved[0]["from"] == 3
    assert "the worker on device 3 died" in moved[0]["why"]


@pytest.mark.gates
def test_every_device_given_up_stops_the_run_with_one_message(tmp_path, lib_dir):
    proc, results = run(tmp_path, lib_dir, "--device-id", "4-5",
                        env={"ACLNN_TEST_DOUBLE_DEAD_DEVICES": "4,5"})  # fmt: skip
    assert_clean(proc, 3)
    error = [ln for ln in proc.stderr.splitlines() if ln.startswith("Error:")]
    assert len(error) == 1
    assert "every device was given up" in error[0]
    assert "device 4:" in error[0] and "device 5:" in error[0]


# -- the options: one clear message for each mistake --------------------------------------------


def session(**values) -> Session:
    return Session.create(default_registry(), values)


@pytest.mark.parametrize("text, ids", [("3", [3]), ("0,1,2,3", [0, 1, 2, 3]), ("0-3", [0, 1, 2, 3]),
                                       ("0-1,4", [0, 1, 4]), (" 2 , 7 ", [2, 7])])  # fmt: skip
def test_a_device_list_is_read_as_written(text, ids):
    assert config.parse_devices(text) == ids


@pytest.mark.parametrize("text, needle", [("x", "expected device ids"), ("0,,1", "expected"),
                                          ("-1", "expected"), ("3-1", "expected"),
                                          ("0,1,0", "device 0 is named twice")])  # fmt: skip
def test_a_bad_device_list_is_one_message_naming_the_option(text, needle):
    with pytest.raises(config.ConfigError, match=needle) as err:
        config.parse_devices(text, "--device-id")
    assert str(err.value).startswith(f"--device-id {text!r}")


def test_the_blocklist_leaves_out_its_devices(lib_dir):
    s = session(backend="aclnn", lib_dir=str(lib_dir), device_id="0-3", device_blocklist="1,2")
    assert s.devices == [0, 3]
    assert s.backend_options["device_id"] == 0  # replay and the plugin use the first device
    cfg = s.config()
    assert (cfg.devices, cfg.fleet, s.jobs) == ((0, 3), True, 2)


@pytest.mark.parametrize("values, needles", [
    ({"device_id": "0,1", "device_blocklist": "0,1"}, ["--device-blocklist 0,1", "every device"]),
    ({"device_id": "0,1", "jobs": 4}, ["--jobs 4", "--procs-per-device"]),
    ({"device_blocklist": "1"}, ["--device-blocklist", "--device-id"]),
    ({"procs_per_device": 0}, ["--procs-per-device 0", ">= 1"]),
    ({"device_failures": 0}, ["--device-failures 0", ">= 1"]),
    ({"device_id": "0,1", "backend_opts": ("device_id=2",)}, ["device_id", "--device-id", "give one"]),
])  # fmt: skip
def test_a_mistake_in_the_device_options_is_one_message(lib_dir, values, needles):
    with pytest.raises(config.ConfigError) as err:
        session(backend="aclnn", lib_dir=str(lib_dir), **values)
    for n in needles:
        assert n in str(err.value), (n, str(err.value))


def test_the_plugin_names_its_own_flags():
    with pytest.raises(config.ConfigError, match=r"^--aclnn-device-id 'a,b'"):
        Session.create(default_registry(), {"backend": "aclnn", "device_id": "a,b"}, PYTEST)


def test_several_workers_on_the_backends_own_device(lib_dir):
    s = session(backend="aclnn", lib_dir=str(lib_dir), procs_per_device=3)
    assert (s.devices, s.jobs, s.config().fleet) == ([0], 3, True)


@pytest.mark.gates
def test_a_backend_without_devices_refuses_a_device_list(tmp_path):
    """torch on the CPU binds no device: --device-id is refused, and so are the options of a
    run over devices; parallel workers there are --jobs."""
    proc = conform("run", "--backend", "torch", "--device-id", "0,1", "--results", tmp_path / "r")
    assert_one_line_error(proc, "--device-id does not apply to --backend torch")
    proc = conform("run", "--backend", "torch", "--procs-per-device", "2", "--results",
                   tmp_path / "r")  # fmt: skip
    assert_one_line_error(proc, "--procs-per-device", "not to --backend torch", "--jobs")


def test_torch_npu_is_bound_to_a_device_through_its_torch_device():
    assert TorchNpuBackend.on_device({"device": "npu"}, 5) == {"device": "npu:5"}
    assert TorchNpuBackend.device_of({"device": "npu:6"}) == 6
    assert TorchNpuBackend.device_of({}) == 0  # "npu": torch_npu's current device, 0
    assert AclnnBackend.on_device({"lib_dir": "x"}, 2) == {"lib_dir": "x", "device_id": 2}
    assert AclnnBackend.device_of({"device_id": "7"}) == 7


def test_a_record_keeps_its_device_fields_through_its_line():
    rec = Result("a/b/c", "pass", device=3, device_fault=None, moved={"from": 1, "why": "lost"})
    back = Result.from_json(rec.to_json())
    assert (back.device, back.moved, back.device_fault) == (3, {"from": 1, "why": "lost"}, None)
    assert "device_fault" not in json.loads(rec.to_json())  # never set: left out
