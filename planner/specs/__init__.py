"""Specs: units, YAML reading, hardware and model specs, the Hugging Face config import, and the
registry of bundled names.  Nothing here knows an equation."""
