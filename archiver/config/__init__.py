"""Settings: one frozen Settings from defaults, TOML and the command line, and the configuration
each component is built from.
"""
