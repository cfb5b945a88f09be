"""xworkmate: the kernel (settings, config, API keys, health, periodic jobs, the method
table) and the wiring of the apps. Importing this package builds nothing (no Celery
app, no Django setup), so its pure helpers in `xworkmate.lib` load on their own.
"""
