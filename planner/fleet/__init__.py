"""Fleet plans: several workloads on a mix of systems under supply, region, power and budget limits
(:mod:`~planner.fleet.plan`), the plan's sensitivity (:mod:`~planner.fleet.sensitivity`) and its
live spreadsheet (:mod:`~planner.fleet.workbook`)."""
