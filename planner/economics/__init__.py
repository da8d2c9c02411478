"""Economics: demand, pools of whole instances, power and cost, and the sizing questions built on
the frontiers (``size``, ``power_budget``, ``cost_target``, ``fleet_capacity``)."""
