"""ReplicaLab: the framework-free core of the experiment-planning negotiation."""

__version__ = "0.1.0"
