"""Scaffolding every test folder, the benchmark and the e2e tier share."""
