"""Wake-on-LAN magic packets: 6 bytes of 0xFF, then the target MAC address 16 times.

The packet goes out as one UDP datagram, usually to the broadcast address
(RIGWAY_WAKE_BROADCAST, default `255.255.255.255:9`).
"""

from __future__ import annotations

import asyncio
import re
import socket

__all__ = [
    "DEFAULT_WAKE_PORT",
    "MAGIC_PACKET_LENGTH",
    "magic_packet",
    "parse_host_port",
    "parse_mac",
    "send_magic_packet",
]

DEFAULT_WAKE_PORT = 9
MAGIC_PACKET_LENGTH = 6 + 16 * 6

_HEX2 = "[0-9a-fA-F]{2}"
_HEX4 = "[0-9a-fA-F]{4}"
# aa:bb:cc:dd:ee:ff, aa-bb-cc-dd-ee-ff (one separator throughout), aabb.ccdd.eeff (Cisco).
_MAC_FORMS = (
    re.compile(rf"{_HEX2}(:{_HEX2}){{5}}"),
    re.compile(rf"{_HEX2}(-{_HEX2}){{5}}"),
    re.compile(rf"{_HEX4}\.{_HEX4}\.{_HEX4}"),
)
_HOST_PORT = re.compile(
    r"\[(?P<v6>[0-9A-Fa-f:.]+)\]:(?P<v6port>\d{1,5})|(?P<host>[^:\[\]]+):(?P<port>\d{1,5})"
)


def parse_mac(text: str) -> bytes:
    """Six bytes from `aa:bb:cc:dd:ee:ff`, `aa-bb-cc-dd-ee-ff` or `aabb.ccdd.eeff`."""
    candidate = text.strip()
    if not any(form.fullmatch(candidate) for form in _MAC_FORMS):
        raise ValueError(f"not a MAC address: {text!r}")
    return bytes.fromhex(re.sub(r"[:.\-]", "", candidate))


def magic_packet(mac: bytes) -> bytes:
    """The 102-byte Wake-on-LAN payload for `mac`."""
    if len(mac) != 6:
        raise ValueError("a MAC address is 6 bytes")
    return b"\xff" * 6 + mac * 16


def parse_host_port(text: str) -> tuple[str, int]:
    """`host:port` or `[ipv6]:port` → (host, port); port 1 to 65535."""
    match = _HOST_PORT.fullmatch(text.strip())
    if match is None:
        raise ValueError(f"expected host:port, got {text!r}")
    host = match["v6"] or match["host"]
    port = int(match["v6port"] or match["port"])
    if not 1 <= port <= 65535:
        raise ValueError(f"port out of range in {text!r}")
    return host, port


async def send_magic_packet(mac: bytes, host: str, port: int = DEFAULT_WAKE_PORT) -> None:
    """Send one magic packet for `mac` to `host:port` over UDP (broadcast allowed)."""
    payload = magic_packet(mac)
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(host, port, type=socket.SOCK_DGRAM)
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setblocking(False)
        if family == socket.AF_INET:
            # Without SO_BROADCAST the kernel refuses 255.255.255.255 with EACCES.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_BROADCAST, 1)
        await loop.sock_sendto(sock, payload, address)
