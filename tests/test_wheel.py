"""The wheel: one top-level import name (`aclnn_conformance`), every file of the five folders
inside it, and an installation that works beside a distribution which owns the generic names
`reports` and `specs` (PyPI has such distributions).

Offline: the wheel is built with `pip wheel --no-build-isolation` from a copy of the checkout, the
fresh virtual environment borrows this interpreter's dependencies through a .pth file (every
entry of its site-packages but this project's own), and nothing is downloaded.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ("cli", "conformance", "reference", "reports", "specs")
NS = "aclnn_conformance"

pytestmark = pytest.mark.gates  # a wheel build and a virtual environment: seconds each


def _copy_checkout(dest: Path) -> Path:
    """The files a build reads, without the checkout's build leftovers."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, dest / name)
    for folder in FOLDERS:
        shutil.copytree(REPO / folder, dest / folder, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("wheel")
    src = _copy_checkout(tmp / "src")
    out = tmp / "dist"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(src),
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "-q",
            "-w",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    (found,) = out.glob("aclnn_conformance-*.whl")
    return found


def _source_files() -> set[str]:
    """Every file of the five folders, as the wheel must name it."""
    out = set()
    for folder in FOLDERS:
        for f in (REPO / folder).rglob("*"):
            if f.is_file() and "__pycache__" not in f.parts and f.suffix != ".pyc":
                out.add(f"{NS}/{f.relative_to(REPO).as_posix()}")
    return out


def test_the_wheel_has_one_top_level_name(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {NS, wheel.name.split("-py3")[0] + ".dist-info"}, tops
    top_level = [n for n in names if n.endswith(".dist-info/top_level.txt")]
    if top_level:  # setuptools writes it: the import names the wheel provides
        text = zipfile.ZipFile(wheel).read(top_level[0]).decode()
        assert text.split() == [NS]


def test_the_wheel_ships_every_module_and_data_file(wheel: Path):
    """Spec YAMLs, the schema, the expectations, the report templates and every module."""
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = sorted(_source_files() - names)
    assert not missing, f"not in the wheel: {missing}"
    for data in (
        "specs/schema/op-spec.schema.json",
        "specs/ops/elu_backward.yaml",
        "specs/expectations/torch.yaml",
        "reports/templates/report.html.j2",
    ):
        assert f"{NS}/{data}" in names


def test_the_wheel_names_its_entry_points_in_the_namespace(wheel: Path):
    z = zipfile.ZipFile(wheel)
    (ep,) = [n for n in z.namelist() if n.endswith("entry_points.txt")]
    text = z.read(ep).decode()
    targets = [ln.split("=", 1)[1].strip() for ln in text.splitlines() if "=" in ln]
    assert targets and all(t.startswith(f"{NS}.") for t in targets), targets
    assert "[aclnn_conformance.backends]" in text and "[pytest11]" in text
    assert f"aclnn-conform = {NS}.cli.main:main" in text


def _dummy_wheel(folder: Path) -> Path:
    """A distribution owning the top-level packages `reports` and `specs`, as some on PyPI do."""
    files = {
        "reports/__init__.py": "WHO = 'dummy reports'\n",
        "specs/__init__.py": "WHO = 'dummy specs'\n",
        "dummy_generic-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: dummy-generic\n"
        "Version: 1.0\n",
        "dummy_generic-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\n"
        "Root-Is-Purelib: true\nTag: py3-none-any\n",
        "dummy_generic-1.0.dist-info/top_level.txt": "reports\nspecs\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{name},sha256={digest.decode()},{len(text.encode())}")
    record.append("dummy_generic-1.0.dist-info/RECORD,,")
    path = folder / "dummy_generic-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, text)
        z.writestr("dummy_generic-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return path


def _borrowed_site_packages(folder: Path) -> Path:
    """This interpreter's dependencies (numpy, yaml, click, ...), without this project itself."""
    folder.mkdir()
    dirs = [*site.getsitepackages(), sysconfig.get_paths()["purelib"]]
    for d in map(Path, dict.fromkeys(dirs)):
        if not d.is_dir():
            continue
        for entry in d.iterdir():
            name = entry.name
            if name.startswith((NS, "__editable__", "_" + NS)) or name.endswith(".pth"):
                continue
            if name in ("reports", "specs", "cli", "conformance", "reference"):
                continue
            if not (folder / name).exists():
                (folder / name).symlink_to(entry)
    return folder


def test_installed_beside_packages_named_reports_and_specs(wheel: Path, tmp_path: Path):
    venv = tmp_path / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    py = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    deps = _borrowed_site_packages(tmp_path / "deps")
    Path(purelib, "borrowed-deps.pth").write_text(f"{deps}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            str(_dummy_wheel(tmp_path)),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    if install.returncode and "no such option: --python" in install.stderr:
        pytest.skip("pip older than 22.3 (no --python)")
    assert install.returncode == 0, install.stderr
    elsewhere = tmp_path / "elsewhere"  # not the checkout: nothing of it is importable
    elsewhere.mkdir()
    lint = subprocess.run(
        [str(venv / "bin" / "aclnn-conform"), "specs", "lint"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert "specs OK" in lint.stdout
    both = subprocess.run(
        [
            str(py),
            "-c",
            "import reports, specs, aclnn_conformance.specs as s; "
            "print(reports.WHO, '|', specs.WHO, '|', s.root())",
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert both.returncode == 0, both.stderr
    who_reports, who_specs, root = (x.strip() for x in both.stdout.split("|"))
    assert (who_reports, who_specs) == ("dummy reports", "dummy specs")
    assert Path(root).is_relative_to(purelib) and (Path(root) / "ops").is_dir()
