"""The agent side: agents and runners, the built-in agents, agents.yaml, the models' protocol and the offline
models, the work tree."""
