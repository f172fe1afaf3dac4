"""Custom checkov checks for make scan (checkov loads an external checks dir only as a package)."""
