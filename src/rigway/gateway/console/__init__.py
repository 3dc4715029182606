"""The rig owner's web console: server-rendered pages under /console.

Pages call the same services as the REST API's console-token routes, always with the
signed-in account's id, so the console can do nothing the API would refuse.
"""
