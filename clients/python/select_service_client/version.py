"""The client's version (independent of the service's)."""
__version__ = "0.1.0"
