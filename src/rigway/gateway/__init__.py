"""The Rigway gateway: the REST API, the host link endpoint and the console."""
