"""ReplicaLab: the framework-free core of the experiment-planning negotiation."""

from importlib.util import find_spec
from typing import Any

from replicalab.version import __version__ as __version__  # re-exported: `replicalab.__version__`

_VERIFIERS_V1 = ("ReplicaLabEnv", "ReplicaLabTaskset")
"""What verifiers 0.4 finds by the taskset id "replicalab": it imports this package and takes
the `Taskset` and `Env` subclasses its `__all__` names (`replicalab.envs.verifiers_v1`)."""


def load_environment(*args: Any, **kwargs: Any) -> Any:
    """verifiers' entry point: `verifiers.load_environment("replicalab", **args)` imports the
    module named after the environment and calls its `load_environment`. The environment is
    `replicalab.envs.verifiers_env.load_environment`'s (same arguments; needs the [verifiers]
    extra), imported only here so the core stays free of any RL framework."""
    from replicalab.envs.verifiers_env import load_environment as load_verifiers_env

    return load_verifiers_env(*args, **kwargs)


def __getattr__(name: str) -> Any:
    """The verifiers 0.4 classes, imported only when asked for, and `__all__`, which names them
    only where verifiers 0.4 is installed (so `from replicalab import *` never needs it)."""
    if name == "__all__":
        return ["__version__", "load_environment", *(_VERIFIERS_V1 if find_spec("verifiers.v1") else ())]
    if name in _VERIFIERS_V1:
        from replicalab.envs import verifiers_v1

        return getattr(verifiers_v1, name)
    raise AttributeError(f"module 'replicalab' has no attribute {name!r}")
