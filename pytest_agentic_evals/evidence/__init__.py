"""What the evidence of a run proves: live qualification, capability claims, seam coverage."""
