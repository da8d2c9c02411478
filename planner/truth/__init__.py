"""Truth: how right the model is and how sure.  Validation against published and measured
points, calibration of the realistic-mode efficiencies, uncertainty bands, sensitivities."""
