"""Bundled model specifications (YAML), shipped as package data."""
