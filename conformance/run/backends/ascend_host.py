"""What a run on an Ascend host needs to be judged elsewhere, shared by the aclnn and torch_npu
adapters: the CANN version, where the operator package is (ASCEND_OPP_PATH), and a one-line
diagnosis of what is missing (every operator answers 561107 without the package; a device in
saturation mode turns the inf and NaN the specs expect into finite values).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

SET_ENV = "source the CANN toolkit's set_env.sh (e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh)"


def cann_version(lib_dir: Path) -> tuple[str | None, str | None]:
    """(version, file it was read from) from the toolkit's version files, if any."""
    roots = dict.fromkeys((lib_dir.parent, lib_dir.resolve().parent))  # lib64 is often a link
    names = (
        "version.cfg",
        "ascend_toolkit_install.info",
        "share/info/runtime/version.info",
        "runtime/version.info",
    )
    for f in (r / n for r in roots for n in names):
        try:
            for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
                if line.strip().lower().startswith("version="):
                    return line.split("=", 1)[1].strip(), str(f)
        except OSError:
            continue
    return None, None


def opp_state() -> tuple[str | None, bool]:
    """($ASCEND_OPP_PATH, whether the library would find its operator package): the library
    looks in $ASCEND_HOME_PATH/opp_latest, then $ASCEND_OPP_PATH (a directory)."""
    home, opp = os.environ.get("ASCEND_HOME_PATH"), os.environ.get("ASCEND_OPP_PATH")
    found = bool(home and (Path(home) / "opp_latest").is_dir()) or bool(opp and Path(opp).is_dir())
    return opp, found


def diagnose(facts: dict[str, Any]) -> str:
    """One line naming what a run needs and this host lacks ("" when nothing is missing)."""
    problems = []
    if not facts.get("opp_found"):
        opp = facts.get("ascend_opp_path")
        what = f"ASCEND_OPP_PATH={opp} is not a directory" if opp else "ASCEND_OPP_PATH is not set"
        problems.append(
            f"{what}: every operator would fail with 561107 "
            f"(ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND); {SET_ENV}"
        )
    if facts.get("device_error"):
        problems.append(
            f"device {facts.get('device_id')} cannot be started "
            f"({facts['device_error']}); check the driver with npu-smi info"
        )
    elif facts.get("device_count") == 0:
        problems.append(
            "no NPU visible (aclrtGetDeviceCount is 0); check the driver with npu-smi info"
        )
    if facts.get("overflow_mode") == "saturation":
        problems.append(
            "the device computes in saturation mode: overflows give the largest "
            "finite value and NaN gives 0, where the specs (IEEE) expect inf and "
            "NaN; pass --backend-opt overflow_mode=inf-nan where the SoC has it"
        )
    return "; ".join(problems)


def summary_line(facts: dict[str, Any]) -> str:
    """The facts a report's header shows, in one line."""
    parts = [facts.get("library") or f"CANN {facts.get('cann_version') or '(version unknown)'}"]
    if facts.get("soc"):
        parts.append(f"SoC {facts['soc']}")
    if facts.get("device_count") is not None:
        parts.append(f"{facts['device_count']} device(s), device {facts.get('device_id')} used")
    if facts.get("overflow_mode"):
        parts.append(f"overflow {facts['overflow_mode']}")
    parts.append(f"ASCEND_OPP_PATH {facts.get('ascend_opp_path') or 'not set'}")
    return " · ".join(parts)
