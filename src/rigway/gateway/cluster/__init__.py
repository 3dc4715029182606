"""Several gateway nodes as one service: which node holds each rig's link
(`ownership.py`), the links between nodes (`peer_link.py`) and the forwarding of a
request to the node that holds its rig (`forwarding.py`)."""
