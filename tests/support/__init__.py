"""Servers a fault test starts for itself (its own Redis, its own PostgreSQL cluster).

A fault test stops, kills or freezes only what it started, by PID: the
machine's shared PostgreSQL and Redis are never touched.
"""
