"""Bundled hardware specifications (YAML), shipped as package data."""
