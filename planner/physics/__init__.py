"""Physics: the notation (``symbols``), the closed-form equations in sympy (``equations``,
``serving_eq``), their compiled numeric form (``compiled``) and the step model that feeds them
from specs and a layout (``step``)."""
