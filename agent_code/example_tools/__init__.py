"""An example of tools of your own: `sam build` ships this folder (agent_code/) with the deployment, so
agents.yaml can name `example_tools.versions:bump_version` there as on your machine."""
