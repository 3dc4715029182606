"""Wake-on-LAN parsing and a magic packet caught on a loopback UDP socket."""

from __future__ import annotations

import asyncio
import socket

import pytest

from rigway.wol import (
    MAGIC_PACKET_LENGTH,
    magic_packet,
    parse_host_port,
    parse_mac,
    send_magic_packet,
)

MAC = bytes.fromhex("a1b2c3d4e5f6")


@pytest.mark.parametrize(
    "text", ["a1:b2:c3:d4:e5:f6", "A1-B2-C3-D4-E5-F6", "a1b2.c3d4.e5f6", " a1:b2:c3:d4:e5:f6 "]
)
def test_supported_mac_form_parsed(text: str) -> None:
    assert parse_mac(text) == MAC


@pytest.mark.parametrize(
    "text",
    [
        "",
        "a1b2c3d4e5f6",
        "a1:b2:c3:d4:e5",
        "a1:b2:c3:d4:e5:f6:07",
        "a1:b2-c3:d4:e5:f6",
        "a1:b2:c3:d4:e5:g6",
        "a1:b2:c3:d4:e5:f",
        "a1b2.c3d4.e5f",
        "a1b2:c3d4:e5f6",
    ],
)
def test_other_mac_form_refused(text: str) -> None:
    with pytest.raises(ValueError, match="MAC"):
        parse_mac(text)


def test_magic_packet_is_ff_then_mac_sixteen_times() -> None:
    packet = magic_packet(MAC)

    assert len(packet) == MAGIC_PACKET_LENGTH == 102
    assert packet == b"\xff" * 6 + MAC * 16


def test_magic_packet_of_short_mac_refused() -> None:
    with pytest.raises(ValueError, match="6 bytes"):
        magic_packet(MAC[:5])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("255.255.255.255:9", ("255.255.255.255", 9)),
        ("192.168.1.255:7", ("192.168.1.255", 7)),
        ("wol.lan:40000", ("wol.lan", 40000)),
        ("[ff02::1]:9", ("ff02::1", 9)),
    ],
)
def test_host_port_parsed(text: str, expected: tuple[str, int]) -> None:
    assert parse_host_port(text) == expected


@pytest.mark.parametrize(
    "text", ["255.255.255.255", ":9", "host:0", "host:65536", "host:x", "::1:9", "[::1]", ""]
)
def test_bad_host_port_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"host:port|port"):
        parse_host_port(text)


async def test_magic_packet_arrives_on_loopback_udp_socket() -> None:
    loop = asyncio.get_running_loop()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.setblocking(False)
        port = listener.getsockname()[1]

        await send_magic_packet(parse_mac("a1:b2:c3:d4:e5:f6"), "127.0.0.1", port)
        async with asyncio.timeout(5):
            received = await loop.sock_recv(listener, 1024)

    assert received == b"\xff" * 6 + MAC * 16
