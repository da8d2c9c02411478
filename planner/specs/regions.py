"""Where a system may be sold: a module of its own, so that the command line's ``--help`` names the
regions without loading the spec reader."""

#: Regions a system may be sold in (``system.regions``): ``china`` (China, Hong Kong, Macau), where
#: US export rules (EAR 3A090/4A090) require a licence for the parts above the thresholds, and
#: ``global`` (elsewhere, as licensed).  See docs/specs.md.
REGIONS = ("global", "china")
