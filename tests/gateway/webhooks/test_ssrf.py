"""Webhook URL checks: every refused form, at creation, with a resolver the test controls."""

from __future__ import annotations

import pytest

from rigway.gateway.webhooks.ssrf import (
    CheckedTarget,
    SystemResolver,
    UnsafeWebhookUrl,
    check_webhook_url,
)
from tests.gateway.webhooks.fakes import FakeResolver

PUBLIC_V4 = "93.184.216.34"
PUBLIC_V6 = "2606:2800:220:1:248:1893:25c8:1946"

REFUSED_V4 = [
    "0.0.0.0",
    "0.1.2.3",
    "10.0.0.1",
    "10.255.255.255",
    "100.64.0.1",
    "100.100.100.200",
    "100.127.255.254",
    "127.0.0.1",
    "127.255.255.254",
    "169.254.1.1",
    "169.254.169.254",
    "169.254.170.2",
    "172.16.0.1",
    "172.31.255.255",
    "192.0.0.1",
    "192.0.0.170",
    "192.0.2.1",
    "192.88.99.1",
    "192.168.1.1",
    "198.18.0.1",
    "198.19.255.255",
    "198.51.100.7",
    "203.0.113.9",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
]

REFUSED_V6 = [
    "::",
    "::1",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "::ffff:169.254.169.254",
    "::ffff:100.100.100.200",
    "::ffff:0:7f00:1",  # SIIT IPv4-translated
    "::127.0.0.1",  # IPv4-compatible
    "::a9fe:a9fe",  # IPv4-compatible 169.254.169.254
    "64:ff9b::7f00:1",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe",  # NAT64 of 169.254.169.254
    "64:ff9b::a00:1",  # NAT64 of 10.0.0.1
    "64:ff9b:1::808:808",  # local-use NAT64
    "2002:7f00:1::1",  # 6to4 of 127.0.0.1
    "2002:a9fe:a9fe::1",  # 6to4 of 169.254.169.254
    "2002:c0a8:101::1",  # 6to4 of 192.168.1.1
    "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo, client 127.0.0.1
    "2001:0:4136:e378:8000:63bf:3fff:fdd2",  # Teredo, client 192.0.2.45
    "2001:0:a00:1:8000:63bf:f7f7:f7f7",  # Teredo, server 10.0.0.1
    "100::1",
    "2001:db8::1",
    "2001:10::1",
    "3fff::1",
    "5f00::1",
    "fc00::1",
    "fd12:3456:789a::1",
    "fd00:ec2::254",
    "fe80::1",
    "fe80::1%eth0",
    "febf::1",
    "fec0::1",
    "ff02::1",
    "ff0e::fb",
    "1234::1",  # outside 2000::/3
]

METADATA_NAMES = [
    "metadata",
    "metadata.google.internal",
    "METADATA.GOOGLE.INTERNAL.",
    "metadata.goog",
    "metadata.azure.com",
    "instance-data",
    "instance-data.ec2.internal",
    "Instance-Data.",
    "x.metadata.google.internal",
]

METADATA_ADDRESSES = [
    "169.254.169.254",
    "169.254.170.2",
    "100.100.100.200",
    "fd00:ec2::254",
    "::ffff:169.254.169.254",
    "64:ff9b::a9fe:a9fe",
    "2002:a9fe:a9fe::1",
]

NUMERIC_LOOPBACK_SPELLINGS = [
    "127.1",
    "0x7f000001",
    "2130706433",
    "0177.0.0.1",
    "0x7f.1",
    "017700000001",
    "0",
]

MALFORMED_URLS = [
    "http://hooks.example.com/",
    "ftp://hooks.example.com/",
    "javascript:alert(1)",
    "//hooks.example.com/x",
    "hooks.example.com/x",
    "https://user:secret@hooks.example.com/",
    "https://user@hooks.example.com/",
    "https://hooks.example.com@evil.example/",
    "https:///path",
    "https://",
    "https://hooks example.com/",
    "https://hooks.example.com\t/",
    "https://hooks.example.com\\@evil.example/",
    "https://hooks.example.com:0/",
    "https://hooks.example.com:99999/",
    "https://hooks.example.com:port/",
    "https://[fe80::1%25eth0]/",
    "https://[::1/",
    "https://hooks..example.com/",
    "https://-hooks.example.com/",
    "https://hooks.example.com/" + "a" * 2100,
]


def resolver_for(*addresses: str) -> FakeResolver:
    return FakeResolver({"hooks.example.com": list(addresses)})


@pytest.mark.parametrize("address", REFUSED_V4 + REFUSED_V6)
async def test_name_resolving_to_non_global_address_refused(address: str) -> None:
    with pytest.raises(UnsafeWebhookUrl, match="resolves to"):
        await check_webhook_url(
            "https://hooks.example.com/h", resolver=resolver_for(address), allow_private=False
        )


@pytest.mark.parametrize("address", [a for a in REFUSED_V4 + REFUSED_V6 if "%" not in a])
async def test_ip_literal_non_global_refused(address: str) -> None:
    host = f"[{address}]" if ":" in address else address
    resolver = FakeResolver()
    with pytest.raises(UnsafeWebhookUrl, match="resolves to"):
        await check_webhook_url(f"https://{host}/h", resolver=resolver, allow_private=False)
    assert resolver.calls == []


async def test_one_private_address_among_public_ones_refused() -> None:
    resolver = resolver_for(PUBLIC_V4, PUBLIC_V6, "10.1.2.3")
    with pytest.raises(UnsafeWebhookUrl, match="private"):
        await check_webhook_url(
            "https://hooks.example.com/", resolver=resolver, allow_private=False
        )


async def test_refusal_reason_does_not_reveal_the_address() -> None:
    with pytest.raises(UnsafeWebhookUrl) as caught:
        await check_webhook_url(
            "https://hooks.example.com/", resolver=resolver_for("10.1.2.3"), allow_private=False
        )
    assert "10.1.2.3" not in str(caught.value)


@pytest.mark.parametrize("spelling", NUMERIC_LOOPBACK_SPELLINGS)
async def test_numeric_spelling_resolved_by_system_refused(spelling: str) -> None:
    with pytest.raises(UnsafeWebhookUrl, match="resolves to"):
        await check_webhook_url(
            f"https://{spelling}/h", resolver=SystemResolver(), allow_private=False
        )


@pytest.mark.parametrize("name", METADATA_NAMES)
@pytest.mark.parametrize("allow_private", [False, True])
async def test_metadata_name_refused_without_resolving(name: str, allow_private: bool) -> None:
    canonical = name.lower().rstrip(".")
    resolver = FakeResolver({canonical: [PUBLIC_V4]})
    with pytest.raises(UnsafeWebhookUrl, match="metadata"):
        await check_webhook_url(f"https://{name}/", resolver=resolver, allow_private=allow_private)
    assert resolver.calls == []


@pytest.mark.parametrize("address", METADATA_ADDRESSES)
async def test_metadata_address_refused_even_when_private_allowed(address: str) -> None:
    with pytest.raises(UnsafeWebhookUrl, match="metadata"):
        await check_webhook_url(
            "https://hooks.example.com/", resolver=resolver_for(address), allow_private=True
        )


@pytest.mark.parametrize("url", MALFORMED_URLS)
async def test_malformed_or_non_https_url_refused(url: str) -> None:
    resolver = FakeResolver({"hooks.example.com": [PUBLIC_V4], "evil.example": [PUBLIC_V4]})
    with pytest.raises(UnsafeWebhookUrl):
        await check_webhook_url(url, resolver=resolver, allow_private=False)


async def test_unresolvable_name_refused() -> None:
    with pytest.raises(UnsafeWebhookUrl, match="does not resolve"):
        await check_webhook_url(
            "https://nowhere.example/", resolver=FakeResolver(), allow_private=False
        )


async def test_name_with_no_addresses_refused() -> None:
    with pytest.raises(UnsafeWebhookUrl, match="does not resolve"):
        await check_webhook_url(
            "https://hooks.example.com/", resolver=resolver_for(), allow_private=False
        )


async def test_public_name_accepted_with_every_address() -> None:
    target = await check_webhook_url(
        "https://Hooks.Example.com./in/coming?x=1&y=2#fragment",
        resolver=resolver_for(PUBLIC_V4, PUBLIC_V6),
        allow_private=False,
    )
    assert target == CheckedTarget(
        scheme="https",
        host="hooks.example.com",
        port=443,
        path_and_query="/in/coming?x=1&y=2",
        addresses=(PUBLIC_V4, PUBLIC_V6),
    )
    assert target.host_header == "hooks.example.com"
    assert target.pinned_url() == f"https://{PUBLIC_V4}:443/in/coming?x=1&y=2"


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::808:808",  # NAT64 of 8.8.8.8
        "2002:808:808::1",  # 6to4 of 8.8.8.8
        "2001:0:4136:e378:8000:63bf:f7f7:f7f7",  # Teredo, both ends global
        "::ffff:8.8.8.8",
    ],
)
async def test_transition_form_of_global_address_accepted(address: str) -> None:
    target = await check_webhook_url(
        "https://hooks.example.com/", resolver=resolver_for(address), allow_private=False
    )
    assert target.addresses == (address,)


async def test_non_default_port_kept_in_host_header() -> None:
    target = await check_webhook_url(
        "https://hooks.example.com:8443/", resolver=resolver_for(PUBLIC_V6), allow_private=False
    )
    assert target.host_header == "hooks.example.com:8443"
    assert target.pinned_url() == f"https://[{PUBLIC_V6}]:8443/"


async def test_internationalised_name_resolved_as_idna() -> None:
    resolver = FakeResolver({"xn--bcher-kva.example": [PUBLIC_V4]})
    target = await check_webhook_url(
        "https://bücher.example/", resolver=resolver, allow_private=False
    )
    assert target.host == "xn--bcher-kva.example"
    assert resolver.calls == ["xn--bcher-kva.example"]


@pytest.mark.parametrize(
    "address", ["127.0.0.1", "10.0.0.1", "192.168.1.10", "::1", "fd12::1", "::ffff:127.0.0.1"]
)
async def test_private_address_accepted_when_private_allowed(address: str) -> None:
    target = await check_webhook_url(
        "http://hooks.example.com:8080/", resolver=resolver_for(address), allow_private=True
    )
    assert target.scheme == "http"
    assert target.addresses == (address,)


@pytest.mark.parametrize(
    "address", ["169.254.1.1", "224.0.0.1", "0.0.0.0", "100.64.0.1", "fe80::1"]
)
async def test_non_private_special_address_refused_when_private_allowed(address: str) -> None:
    with pytest.raises(UnsafeWebhookUrl, match="resolves to"):
        await check_webhook_url(
            "https://hooks.example.com/", resolver=resolver_for(address), allow_private=True
        )


async def test_pinned_url_refuses_unchecked_address() -> None:
    target = await check_webhook_url(
        "https://hooks.example.com/", resolver=resolver_for(PUBLIC_V4), allow_private=False
    )
    with pytest.raises(ValueError, match="checked"):
        target.pinned_url("127.0.0.1")
