"""Webhook target checks against server-side request forgery.

A webhook URL is checked when it is created and again before every delivery, because a
name that resolved to a public address yesterday may resolve to 10.0.0.5 today (DNS
rebinding). The delivery then connects to an address this check returned, never to the
name again, so the check and the connection see the same address.

The rule is an allow-list, not a deny-list: every address the name resolves to must be
global unicast after the IPv4 address hidden inside IPv6 forms (IPv4-mapped,
IPv4-compatible, NAT64, 6to4, Teredo) is unwrapped. `ipaddress` flags are not used for
the verdict: their meaning changed between 3.11 patch releases, `::ffff:127.0.0.1` is not
"loopback" there, and 100.64/10 is neither private nor global.

Numeric spellings such as `127.1`, `0x7f000001`, `2130706433` or `0177.0.0.1` are not IP
literals to `ipaddress` but `getaddrinfo` turns them into 127.0.0.1: they are refused
because the resolved addresses are checked, not the spelling.

Refusal reasons never name the resolved address: how the gateway's DNS sees an internal
name is not the caller's business.

    ValueError
    └── UnsafeWebhookUrl   str(exc) is a human reason, e.g. "webhook url resolves to a
                           loopback address"
"""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import SplitResult, urlsplit

__all__ = [
    "CheckedTarget",
    "Resolver",
    "SystemResolver",
    "UnsafeWebhookUrl",
    "check_webhook_url",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

MAX_URL_LENGTH = 2048

# Instance-metadata services, refused by name even when private targets are allowed.
# A subdomain of one of these is refused too.
_METADATA_NAMES: frozenset[str] = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.com",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.tencentyun.com",
        "metadata.packet.net",
        "metadata.platformequinix.com",
    }
)

# Instance-metadata addresses (AWS/GCP/Azure/OCI, AWS ECS and DNS, AWS IPv6, Alibaba),
# refused even when private targets are allowed.
_METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(text)
    for text in (
        "169.254.169.254",
        "169.254.169.253",
        "169.254.170.2",
        "100.100.100.200",
        "fd00:ec2::254",
        "fd00:ec2::253",
    )
)

# Reasons that `allow_private` (local development and tests only) lets through.
_PRIVATE_REASONS: frozenset[str] = frozenset({"private", "loopback"})

_V4_RULES: tuple[tuple[ipaddress.IPv4Network, str], ...] = tuple(
    (ipaddress.IPv4Network(net), reason)
    for net, reason in (
        ("0.0.0.0/8", "unspecified"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared (carrier-grade NAT)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "reserved"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "reserved"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("255.255.255.255/32", "broadcast"),
        ("240.0.0.0/4", "reserved"),
    )
)

# Checked after the IPv4-carrying forms are unwrapped; anything outside 2000::/3 is
# refused afterwards as not global unicast.
_V6_RULES: tuple[tuple[ipaddress.IPv6Network, str], ...] = tuple(
    (ipaddress.IPv6Network(net), reason)
    for net, reason in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        # RFC 8215 local-use NAT64: the operator picks where the IPv4 address sits.
        ("64:ff9b:1::/48", "local-use NAT64"),
        ("100::/64", "discard-only"),
        ("2001:db8::/32", "documentation"),
        ("2001::/23", "reserved"),
        ("3fff::/20", "documentation"),
        ("5f00::/16", "reserved"),
        ("fc00::/7", "private"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)
_V6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_V6_COMPATIBLE = ipaddress.IPv6Network("::/96")
_V6_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_V6_TEREDO = ipaddress.IPv6Network("2001::/32")

_LABEL = re.compile(r"(?!-)[a-z0-9_-]{1,63}(?<!-)")
# Whitespace, controls and backslashes: urlsplit silently drops tabs and newlines, and
# other parsers read "\" as "/"; a URL two parsers can read differently is refused.
_FORBIDDEN_URL_CHARS = re.compile(r"[\x00-\x20\x7f\\]")


class UnsafeWebhookUrl(ValueError):
    """The URL may not be used as a webhook target; str(exc) is a human reason."""


class Resolver(Protocol):
    async def resolve(self, host: str, port: int) -> list[str]:
        """Every address `host` resolves to for TCP, as text; OSError when it does not."""
        ...


class SystemResolver:
    """The system resolver (getaddrinfo in the loop's executor), any address family."""

    def __init__(self, *, timeout_s: float = 5.0) -> None:
        self._timeout_s = timeout_s

    async def resolve(self, host: str, port: int) -> list[str]:
        loop = asyncio.get_running_loop()
        # TimeoutError is an OSError: a slow resolver reads as "does not resolve".
        async with asyncio.timeout(self._timeout_s):
            infos = await loop.getaddrinfo(
                host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP
            )
        return list(dict.fromkeys(str(info[4][0]) for info in infos))


@dataclass(frozen=True, slots=True)
class CheckedTarget:
    """A webhook URL that passed the checks, with the addresses that were checked.

    `host` is lower-case ASCII (IDNA), without a trailing dot or IPv6 brackets.
    """

    scheme: str
    host: str
    port: int
    path_and_query: str
    addresses: tuple[str, ...]

    @property
    def host_header(self) -> str:
        """The Host header value: the name, with the port when it is not the default."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        default_port = 443 if self.scheme == "https" else 80
        return host if self.port == default_port else f"{host}:{self.port}"

    def pinned_url(self, address: str | None = None) -> str:
        """The URL with the host replaced by a checked address (the first by default)."""
        chosen = self.addresses[0] if address is None else address
        if chosen not in self.addresses:
            raise ValueError("pinned_url takes only an address that was checked")
        literal = f"[{chosen}]" if ":" in chosen else chosen
        return f"{self.scheme}://{literal}:{self.port}{self.path_and_query}"


async def check_webhook_url(url: str, *, resolver: Resolver, allow_private: bool) -> CheckedTarget:
    """Check `url` as a webhook target; raise UnsafeWebhookUrl with a reason if refused.

    `allow_private` (RIGWAY_WEBHOOK_ALLOW_PRIVATE_TARGETS, local development and tests
    only) also lets http, private and loopback targets through; metadata names and
    addresses stay refused.
    """
    parts = _split(url, allow_private=allow_private)
    host = _normalised_host(parts)
    _refuse_metadata_name(host)
    port = _port(parts)
    addresses = await _resolve(host, port, resolver)
    for address in addresses:
        reason = _address_refusal(address, allow_private=allow_private)
        if reason is not None:
            article = "an" if reason[0] in "aeiou" else "a"
            raise UnsafeWebhookUrl(f"webhook url resolves to {article} {reason} address")
    path = parts.path or "/"
    path_and_query = f"{path}?{parts.query}" if parts.query else path
    return CheckedTarget(parts.scheme, host, port, path_and_query, tuple(addresses))


def _split(url: str, *, allow_private: bool) -> SplitResult:
    if len(url) > MAX_URL_LENGTH:
        raise UnsafeWebhookUrl(f"webhook url is longer than {MAX_URL_LENGTH} characters")
    if _FORBIDDEN_URL_CHARS.search(url):
        raise UnsafeWebhookUrl("webhook url contains whitespace, control characters or '\\'")
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        raise UnsafeWebhookUrl("webhook url is malformed") from exc
    allowed_schemes = {"https", "http"} if allow_private else {"https"}
    if parts.scheme not in allowed_schemes:
        raise UnsafeWebhookUrl("webhook url must use https")
    if "@" in parts.netloc:
        raise UnsafeWebhookUrl("webhook url must not contain a user name or password")
    return parts


def _normalised_host(parts: SplitResult) -> str:
    host = parts.hostname  # lower-cased, brackets removed
    if not host:
        raise UnsafeWebhookUrl("webhook url has no host")
    if _ip_or_none(host) is not None:
        return host
    if ":" in host or "%" in host:
        raise UnsafeWebhookUrl("webhook url host is not a valid address or name")
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError as exc:
        raise UnsafeWebhookUrl("webhook url host is not a valid name") from exc
    ascii_host = ascii_host.removesuffix(".")
    labels = ascii_host.split(".")
    if len(ascii_host) > 253 or not all(_LABEL.fullmatch(label) for label in labels):
        raise UnsafeWebhookUrl("webhook url host is not a valid name")
    return ascii_host


def _refuse_metadata_name(host: str) -> None:
    labels = host.split(".")
    suffixes = {".".join(labels[i:]) for i in range(len(labels))}
    if suffixes & _METADATA_NAMES:
        raise UnsafeWebhookUrl("webhook url names a cloud metadata service")


def _port(parts: SplitResult) -> int:
    try:
        port = parts.port
    except ValueError as exc:
        raise UnsafeWebhookUrl("webhook url has an invalid port") from exc
    if port is None:
        return 443 if parts.scheme == "https" else 80
    if port == 0:
        raise UnsafeWebhookUrl("webhook url has an invalid port")
    return port


async def _resolve(host: str, port: int, resolver: Resolver) -> list[str]:
    # An IP literal is its own resolution: no DNS query, the same checks.
    if _ip_or_none(host) is not None:
        return [host]
    try:
        addresses = await resolver.resolve(host, port)
    except (OSError, UnicodeError) as exc:
        raise UnsafeWebhookUrl("webhook url host does not resolve") from exc
    if not addresses:
        raise UnsafeWebhookUrl("webhook url host does not resolve")
    return addresses


def _ip_or_none(text: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def _address_refusal(text: str, *, allow_private: bool) -> str | None:
    """Why this resolved address is refused, or None when it may be used."""
    # A scope id ("fe80::1%eth0") would make the metadata comparison miss.
    address = _ip_or_none(text.split("%", 1)[0])
    if address is None:
        return "unparseable"
    embedded = _unwrap(address)
    if address in _METADATA_ADDRESSES or any(a in _METADATA_ADDRESSES for a in embedded):
        return "cloud metadata"
    for candidate in embedded:
        reason = _classify(candidate)
        if reason is not None and not (allow_private and reason in _PRIVATE_REASONS):
            return reason
    return None


def _unwrap(address: IPAddress) -> list[IPAddress]:
    """The address itself, or the IPv4 address(es) an IPv6 transition form carries."""
    if isinstance(address, ipaddress.IPv4Address):
        return [address]
    if address.ipv4_mapped is not None:
        return [address.ipv4_mapped]
    low32 = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _V6_COMPATIBLE and int(address) > 1:
        return [low32]
    if address in _V6_NAT64:
        return [low32]
    if address.sixtofour is not None:
        return [address.sixtofour]
    if address in _V6_TEREDO and address.teredo is not None:
        server, client = address.teredo
        return [server, client]
    return [address]


def _classify(address: IPAddress) -> str | None:
    """The non-global category of an unwrapped address, or None when global unicast."""
    if isinstance(address, ipaddress.IPv4Address):
        return next((reason for net, reason in _V4_RULES if address in net), None)
    for net, reason in _V6_RULES:
        if address in net:
            return reason
    if address not in _V6_GLOBAL_UNICAST:
        return "reserved (not global unicast)"
    return None
