"""Host agent releases: signed manifests shared by the gateway and the agent."""
