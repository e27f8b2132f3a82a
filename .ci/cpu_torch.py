"""Fail `make extras` when the venv holds a CUDA build of torch or any nvidia-*/cuda-* package:
the extras are meant to run on torch's CPU build, and a CUDA one costs several GB."""

from __future__ import annotations

import importlib.metadata
import sys


def cuda_packages() -> list[str]:
    names = {(dist.metadata["Name"] or "").lower() for dist in importlib.metadata.distributions()}
    return sorted(name for name in names if name.startswith(("nvidia-", "cuda-")))


def main() -> int:
    import torch

    found = cuda_packages()
    if torch.version.cuda is not None or found:
        print(
            f"make: a CUDA build came in (torch {torch.__version__}; {', '.join(found) or 'no nvidia-* package'}):"
            " the extras want torch's CPU build, see the Makefile's TORCH_CPU_INDEX",
            file=sys.stderr,
        )
        return 1
    print(f"torch {torch.__version__}: the CPU build, no nvidia-* package")
    return 0


if __name__ == "__main__":
    sys.exit(main())
