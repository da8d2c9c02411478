"""Measured and published data shipped with the package (see each file's header for source and
license)."""
