"""Framework-free helpers shared by every app (no Django imports here).

They are tested on their own in ``tests/lib`` so the apps can rely on them.
"""
