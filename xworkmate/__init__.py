"""xworkmate: the kernel (settings, config, API keys, health, periodic jobs, the method
table) and the wiring of the apps. Importing this package builds nothing (no Celery
app, no Django setup), so its pure helpers in `xworkmate.lib` load on their own.
"""

# The release's version, and its one home: pyproject.toml reads it from here, and the
# schema, `xworkmate --version` and /healthz show it. Calendar versioning, YEAR.MONTH.N
# with N counting the releases of that month from 0 (docs/decisions/kernel.md, D-K29).
__version__ = "2026.12.0"
