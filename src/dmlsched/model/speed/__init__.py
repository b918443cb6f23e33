"""Speed models, one module per paper; pure functions, no state."""
