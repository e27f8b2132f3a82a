"""How to install an optional extra: one recipe, quoted by every message about a missing extra
and used by `make extras`, and the check that ends it (`python -m replicalab.install
--check-cpu-torch`).

The extras that bring torch (train, trl, rllib) are installed after torch's CPU build, pinned to
its local version (`torch==2.13.0+cpu` on Linux and Windows): only PyTorch's CPU index, or a
wheel of it that pip finds on disk, holds that version, so pip can never resolve PyPI's release
instead, which on Linux is a CUDA build of several GB. Where the CPU index cannot be reached and
no such wheel is found, the first command fails at once, before any download; the check after
the install says what to do then. (On macOS PyPI's build is the CPU one, and the pin is the plain
version.) Drop all three for a CUDA machine.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys

TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_VERSION = "2.13.0"  # the CPU build `make extras` and the recipe install
TORCH_EXTRAS = frozenset({"train", "trl", "rllib"})  # the extras whose packages ask for torch
CPU_TORCH_CHECK = "python -m replicalab.install --check-cpu-torch"


def cpu_torch(platform: str = sys.platform) -> str:
    """torch's CPU build as a pip requirement on `platform`: its `+cpu` local version, which
    PyPI never has, except on macOS, where PyTorch's CPU build carries the plain version."""
    return f"torch=={TORCH_VERSION}" if platform == "darwin" else f"torch=={TORCH_VERSION}+cpu"


CPU_TORCH_FIRST = f"pip install --retries 1 {cpu_torch()} --extra-index-url {TORCH_CPU_INDEX}"
"""The recipe's first command: torch's CPU build alone, its dependencies from PyPI."""
CPU_TORCH_FIX = f"pip install --force-reinstall {cpu_torch()} --extra-index-url {TORCH_CPU_INDEX}"
UNREACHABLE_INDEX = (
    f"Where {TORCH_CPU_INDEX} cannot be reached, download its torch {TORCH_VERSION} CPU wheel for "
    "this Python elsewhere and install that file (pip install ./torch-*.whl, or keep it in a folder "
    "pip's --find-links names), then the extra; in a checkout, `make extras` installs every extra "
    "with any such wheel pip finds."
)


def install_hint(extra: str) -> str:
    """The command that installs `extra`: for the extras that need torch, torch's CPU build
    first and the check that it is what came in."""
    command = f"pip install 'replicalab[{extra}]'"
    if extra in TORCH_EXTRAS:
        command = f"{CPU_TORCH_FIRST} && {command} && {CPU_TORCH_CHECK}"
    return command


def cuda_packages() -> list[str]:
    """The installed nvidia-* and cuda-* distributions, which only a CUDA torch brings."""
    names = {(dist.metadata["Name"] or "").lower() for dist in importlib.metadata.distributions()}
    return sorted(name for name in names if name.startswith(("nvidia-", "cuda-")))


def cpu_torch_problem() -> str | None:
    """What is wrong with the installed torch where its CPU build was asked for, with the fix;
    None when torch is the CPU build and no CUDA package sits beside it. Read from the installed
    distributions, without importing torch: a CUDA build carries a `+cu` version or brings
    nvidia-* packages (PyPI's Linux build does both ways), a CPU build neither."""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return f"torch is not installed; install its CPU build: {CPU_TORCH_FIRST}. {UNREACHABLE_INDEX}"
    found = cuda_packages()
    if not version.partition("+")[2].startswith("cu") and not found:
        return None
    beside = f" with {len(found)} CUDA packages ({', '.join(found)})" if found else ""
    remove = f"pip uninstall -y {' '.join(found)} && " if found else ""
    return (
        f"torch {version} is a CUDA build{beside} where the CPU build was asked for (PyTorch's CPU "
        f"index was probably unreachable, and pip took PyPI's CUDA build). Fix: {remove}{CPU_TORCH_FIX}. "
        f"{UNREACHABLE_INDEX}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m replicalab.install", description="Check what an install of the extras brought in."
    )
    parser.add_argument(
        "--check-cpu-torch",
        action="store_true",
        help="exit 1, saying how to fix it, unless torch is the CPU build with no nvidia-* package",
    )
    args = parser.parse_args(argv)
    if not args.check_cpu_torch:
        parser.print_help()
        return 2
    problem = cpu_torch_problem()
    if problem is not None:
        print(f"Error: {problem}", file=sys.stderr)
        return 1
    print(f"torch {importlib.metadata.version('torch')}: the CPU build, no nvidia-* package")
    return 0


if __name__ == "__main__":
    sys.exit(main())
