"""The gateway app: session mappings, task runs, native tasks, `session.prepare` /
`tasks.get` and the bridge's hooks. It plugs into the kernel from its AppConfig.ready()."""
