"""The installed package's version, read from its metadata: the one number `--version`, every
result's provenance and `replicalab.__version__` give, so none of them can go stale."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("replicalab")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"
