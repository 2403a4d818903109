"""Policy: the YAML file an operator writes, its fields and defaults, each once."""
