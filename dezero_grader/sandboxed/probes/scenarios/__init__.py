"""Scenario modules; importing this package registers every scenario in it."""
import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
    importlib.import_module('{}.{}'.format(__name__, _info.name))
