"""Scenario modules; importing this package registers every scenario."""
from grader.probes.scenarios import api, functions, graph, device, data  # noqa: F401
