"""Published measurements and closed-form results the model is scored against."""
