"""ReplicaLab: the framework-free core of the experiment-planning negotiation."""

from typing import Any

from replicalab.version import __version__

__all__ = ["__version__", "load_environment"]


def load_environment(*args: Any, **kwargs: Any) -> Any:
    """verifiers' entry point: `verifiers.load_environment("replicalab", **args)` imports the
    module named after the environment and calls its `load_environment`. The environment is
    `replicalab.envs.verifiers_env.load_environment`'s (same arguments; needs the [verifiers]
    extra), imported only here so the core stays free of any RL framework."""
    from replicalab.envs.verifiers_env import load_environment as load_verifiers_env

    return load_verifiers_env(*args, **kwargs)
