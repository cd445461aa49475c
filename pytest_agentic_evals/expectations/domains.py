"""Network domain rules for a trial (``allowed_domains`` / ``disallowed_domains``): host
matching, the rules of a case, the expectation kinds that judge a trial's record, and the
report entry of a trial whose proxy could not run.  The proxy that enforces the rules and
records the hosts is in :mod:`pytest_agentic_evals.expectations.proxy`.

Matching: an entry ``example.com`` matches ``example.com`` and every subdomain
(``api.example.com``); ``*.example.com`` matches subdomains only; an IP address matches only
itself.  The port never matters.  ``disallowed_domains`` wins over ``allowed_domains``;
without ``allowed_domains`` every host that is not disallowed is allowed.

Hosts are compared canonically: IP addresses in every spelling a resolver accepts, names in
their IDNA form, lower case, without a trailing dot.

The proxy sees only what is sent through it. In a sandbox in network mode ``proxy`` nothing
else gets out, and ``enforced`` in the report is true; without the sandbox, or in mode
``host``, a client that ignores the proxy variables connects directly, unseen, and
``enforced`` is false with the reason.

Kept free of pytest imports, like the process runner.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentic_evals.expectations.observation import Observation

RULE_KEYS = ("allowed_domains", "disallowed_domains")
LOCAL_RULE = "local_address"
"""The rule of a refusal for a destination on the machine running the evaluation."""
OWN_ADDRESS = "an address of the machine running the evaluation"
FAILURE_PREFIXES = tuple(f"{key}:" for key in RULE_KEYS)

NOTE = ("only requests sent through the proxy are seen: a client that ignores HTTP_PROXY, "
        "HTTPS_PROXY and ALL_PROXY connects directly, neither recorded nor refused")
ENFORCED_NOTE = ("the proxy was the trial's only way out: a client that ignores HTTP_PROXY, "
                 "HTTPS_PROXY and ALL_PROXY reaches nothing outside the sandbox")

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
# The same pattern is in the fixture schema (a test keeps them equal): a host name, optionally
# "*."-prefixed, an IPv4 address (which is host-name shaped) or an IPv6 address (checked again
# with ipaddress at load).
ENTRY_PATTERN = rf"^(?:(?:\*\.)?{_LABEL}(?:\.{_LABEL})*|[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)$(?!\n)"
_REQUESTED_HOST = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
# What inet_aton reads as an IPv4 address: one to four parts, decimal, octal or hex.
_LEGACY_IPV4 = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)(?:\.(?:0x[0-9a-f]*|[0-9]+)){0,3}")


# ---------------------------------------------------------------------------------------------
# Rules
# ---------------------------------------------------------------------------------------------


def ip_text(text: str) -> str | None:
    """The canonical text of an IP address in any spelling a resolver accepts; None when
    ``text`` is not one.

    IPv4 in the forms ``inet_aton`` takes (``127.1``, ``2130706433``, ``0x7f000001``, octal
    parts such as ``0177.0.0.1`` or ``127.000.000.001``), IPv6 with or without brackets, and an
    IPv4-mapped IPv6 address (``::ffff:127.0.0.1``) as the IPv4 address it maps.
    """
    text = text.strip().lower()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        if not _LEGACY_IPV4.fullmatch(text):
            return None
        try:
            return socket.inet_ntoa(socket.inet_aton(text))
        except OSError:
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)


# Private ranges: the networks of the machine running the evaluation (a CI provider's, an
# office's, a cluster's), whose services a trial has no business reaching through the proxy.
_PRIVATE_NETWORKS = tuple(ipaddress.ip_network(net) for net in (
    "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10",  # RFC 1918, RFC 6598
    "fc00::/7", "fec0::/10",  # unique local, and the deprecated site-local
))


def local_kind(address: str) -> str | None:
    """What puts an IP address on the machine running the evaluation or its networks, by its
    range: a loopback, link-local, unspecified or private address (an IPv4 address however
    IPv6 embeds it); None for any other (which may still be one of the machine's own: the
    proxy asks its routes)."""
    try:
        ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(
            address.partition("%")[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif 1 < int(ip) < 2**32:  # IPv4-compatible (::127.0.0.1), deprecated
            ip = ipaddress.IPv4Address(int(ip))
    if ip.is_loopback:
        return "a loopback address of the machine running the evaluation"
    if ip.is_unspecified or ip in ipaddress.IPv4Network("0.0.0.0/8"):
        return "an unspecified address, which reaches the machine running the evaluation"
    if ip.is_link_local:
        return "a link-local address, on the link of the machine running the evaluation"
    if any(ip in network for network in _PRIVATE_NETWORKS):
        return "a private address, on a network of the machine running the evaluation"
    return None


def idna_host(host: str) -> str | None:
    """A host name as DNS sees it: ASCII (IDNA), lower case; None when it cannot be encoded."""
    if host.isascii():
        return host.lower()
    try:
        return host.encode("idna").decode("ascii").lower()
    except UnicodeError:
        return None


def normalise_host(text: str) -> str | None:
    """A requested host as rules see it (canonical IP text, or an IDNA name in lower case
    without a trailing dot); None when it is neither a host name nor an IP address."""
    host = text.strip().removesuffix(".")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if not host or len(host) > 253:
        return None
    address = ip_text(host)
    if address is not None:
        return address
    name = idna_host(host)
    return name if name is not None and _REQUESTED_HOST.fullmatch(name) else None


def normalise_entry(entry: str) -> str:
    entry = entry.strip().removesuffix(".")
    address = ip_text(entry)
    if address is not None:
        return address
    return idna_host(entry) or entry.lower()


def matches(host: str, entry: str) -> bool:
    """Whether a normalised requested host falls under a normalised rule entry."""
    if ip_text(host) is not None or ip_text(entry) is not None:
        return host == entry
    if entry.startswith("*."):
        return host.endswith(entry[1:])
    return host == entry or host.endswith("." + entry)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    rule: str | None = None
    """The rule that refused the host (``disallowed_domains`` or ``allowed_domains``)."""
    entry: str | None = None
    """The entry that matched: the disallowed one that refused, or the allowed one that let in."""


@dataclass(frozen=True)
class DomainPolicy:
    allowed: tuple[str, ...] | None
    """None: every host that is not disallowed is allowed; ``()``: no host is."""
    disallowed: tuple[str, ...] = ()

    @classmethod
    def from_expected(cls, expected: Mapping[str, Any]) -> DomainPolicy | None:
        """The rules of a case (the loader moves case-level ones into ``expected``)."""
        if not any(key in expected for key in RULE_KEYS):
            return None
        allowed = expected.get("allowed_domains")
        return cls(
            allowed=None if allowed is None else tuple(normalise_entry(e) for e in allowed),
            disallowed=tuple(normalise_entry(e) for e in expected.get("disallowed_domains", ())),
        )

    def names(self, host: str) -> bool:
        """Whether ``allowed_domains`` has an entry that is this very host (not a parent
        domain of it, nor a wildcard): what lets the proxy reach the machine running the
        evaluation, which it otherwise never connects to."""
        return self.allowed is not None and host in self.allowed

    def decide(self, host: str) -> Decision:
        for entry in self.disallowed:
            if matches(host, entry):
                return Decision(False, "disallowed_domains", entry)
        if self.allowed is None:
            return Decision(True)
        for entry in self.allowed:
            if matches(host, entry):
                return Decision(True, None, entry)
        return Decision(False, "allowed_domains", None)


def merge_case_rules(
    case: Mapping[str, Any], expected: Mapping[str, Any]
) -> tuple[Mapping[str, Any], list[tuple[str, str]]]:
    """``expected`` with the case-level rules moved into it, and the load-time problems as
    (pointer relative to the case, message).  One place for the rules means every reader of
    ``expected`` (the checks, can_fail, coverage) sees them."""
    problems: list[tuple[str, str]] = []
    merged = dict(expected)
    for key in RULE_KEYS:
        if key not in case:
            continue
        if key in expected:
            problems.append((f"/{key}", f"{key} is given both on the case and in expected; "
                                        "keep one"))
        else:
            merged[key] = case[key]
    for key in RULE_KEYS:
        where = f"/{key}" if key in case else f"/expected/{key}"
        for position, entry in enumerate(merged.get(key, ())):
            if ":" in entry and ip_text(entry) is None:
                problems.append((f"{where}/{position}",
                                 f"{entry!r} is not a valid IPv6 address"))
    allowed = {normalise_entry(e) for e in merged.get("allowed_domains", ())}
    for position, entry in enumerate(merged.get("disallowed_domains", ())):
        if normalise_entry(entry) in allowed:
            where = "/disallowed_domains" if "disallowed_domains" in case \
                else "/expected/disallowed_domains"
            problems.append((f"{where}/{position}", f"{entry!r} is both allowed and disallowed"))
    return merged, problems



# ---------------------------------------------------------------------------------------------
# The expectation kinds
# ---------------------------------------------------------------------------------------------


def check_allowed(value: Any, observation: Observation) -> list[str]:
    return _refusals("allowed_domains", observation)


def check_disallowed(value: Any, observation: Observation) -> list[str]:
    return _refusals("disallowed_domains", observation)


def _refusals(rule: str, observation: Observation) -> list[str]:
    record = observation.domains
    if record is None:
        return [f"{rule}: not checked: no domain proxy ran for this trial"]
    if record.get("proxy") is None and not record.get("enforced"):
        return [f"{rule}: not checked: {record.get('reason') or 'the proxy did not run'}"]
    failures = []
    for violation in record.get("violations", ()):
        if violation["rule"] != rule:
            continue
        if rule == "disallowed_domains":
            failures.append(f"disallowed_domains: contacted disallowed domain "
                            f"{violation['host']} (matches {violation['entry']!r}); "
                            "the proxy refused it")
        else:
            failures.append(f"allowed_domains: contacted {violation['host']}, which is not in "
                            "allowed_domains; the proxy refused it")
    # Refusals beyond the recording bound are counted, not listed; one rule reports them.
    omitted = record.get("violations_not_listed", 0)
    reporter = "disallowed_domains" if record.get("disallowed") else "allowed_domains"
    if omitted and rule == reporter:
        failures.append(f"{rule}: {omitted} more refused host(s), not listed")
    if rule == reporter:
        for violation in record.get("violations", ()):
            if violation["rule"] == LOCAL_RULE:
                failures.append(f"{rule}: contacted {violation['host']}, "
                                f"{local_kind(violation['entry']) or OWN_ADDRESS} "
                                f"({violation['entry']}); the proxy refused it")
        for mismatch in record.get("host_mismatches", ()):
            failures.append(f"{rule}: a request for {mismatch['host']} said Host: "
                            f"{mismatch['host_header']!r}; the proxy refused it")
    return failures


# ---------------------------------------------------------------------------------------------
# The report
# ---------------------------------------------------------------------------------------------


def rules_report(policy: DomainPolicy) -> dict[str, Any]:
    """The rules part of a trial's ``domains`` entry, enforced or not."""
    return {"allowed": None if policy.allowed is None else list(policy.allowed),
            "disallowed": list(policy.disallowed)}


def unenforced_report(policy: DomainPolicy, reason: str) -> dict[str, Any]:
    """The ``domains`` entry of a trial whose proxy could not run."""
    return {
        **rules_report(policy), "enforced": False, "reason": reason, "proxy": None,
        "local_hosts": None, "contacted": [], "violations": [], "requests": 0, "refused": 0,
        "malformed_requests": 0, "hosts_not_listed": 0, "violations_not_listed": 0,
        "host_mismatches": [], "proxy_errors": [], "note": NOTE,
    }
