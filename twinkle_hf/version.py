"""The package's version (setup.cfg reads it from here; results.json records it)."""

__version__ = "0.1.0"
