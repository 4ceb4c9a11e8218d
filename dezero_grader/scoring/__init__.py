"""Check results to a verdict and points (the policy applied), and the scorecard: built and written,
and read back as records."""
