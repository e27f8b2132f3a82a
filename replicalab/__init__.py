"""ReplicaLab: the framework-free core of the experiment-planning negotiation."""

from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("replicalab")  # the installed distribution's, never a second copy
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"


def load_environment(*args: Any, **kwargs: Any) -> Any:
    """verifiers' entry point: `verifiers.load_environment("replicalab", **args)` imports the
    module named after the environment and calls its `load_environment`. The environment is
    `replicalab.envs.verifiers_env.load_environment`'s (same arguments; needs the [verifiers]
    extra), imported only here so the core stays free of any RL framework."""
    from replicalab.envs.verifiers_env import load_environment as load_verifiers_env

    return load_verifiers_env(*args, **kwargs)
