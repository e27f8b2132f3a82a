"""mypy over the whole distribution, under the import names it installs.

Packaging maps `replicalab.envs` onto envs/ and `replicalab.baselines` onto baselines/
(`[tool.setuptools] package-dir`). mypy names a file by its folders and cannot follow the editable
install's import hook, so this script hands it every file with the module name the mapping gives,
then runs mypy with the `[tool.mypy]` settings of pyproject.toml. Usage: `python .ci/typecheck.py`.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mypy import build
from mypy.errors import CompileError
from mypy.main import process_options
from mypy.modulefinder import BuildSource

if sys.version_info >= (3, 11):
    import tomllib
else:  # mypy brings tomli on 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent


def sources() -> list[BuildSource]:
    """Every module of every mapped package, named as installed."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    found = []
    for package, folder in config["tool"]["setuptools"]["package-dir"].items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            module = ".".join([package, *(parts[:-1] if parts[-1] == "__init__" else parts)])
            found.append(BuildSource(str(path), module))
    return found


def main() -> int:
    config = str(ROOT / "pyproject.toml")
    _, options = process_options(["--config-file", config, str(ROOT / "replicalab")])
    try:
        result = build.build(sources(), options)
    except CompileError as error:
        print("\n".join(error.messages), file=sys.stderr)
        return 2
    if result.errors:
        print("\n".join(result.errors))
        return 1
    print(f"Success: no issues found in {len(sources())} source files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
