"""The claim rule registry, filled here and only here from each family's list of rules."""

from __future__ import annotations

from repro.claims.bands import FAMILY as BAND_RULES
from repro.claims.extension import FAMILY as EXTENSION_RULES
from repro.claims.gaps import FAMILY as GAP_RULES
from repro.claims.latency import FAMILY as LATENCY_RULES
from repro.claims.orders import FAMILY as ORDER_RULES
from repro.claims.routing import FAMILY as ROUTING_RULES
from repro.claims.values import FAMILY as VALUE_RULES
from repro.core.registry import Registry

FAMILIES = (VALUE_RULES, GAP_RULES, ORDER_RULES, BAND_RULES, ROUTING_RULES, LATENCY_RULES, EXTENSION_RULES)


def build_rules() -> Registry:
    """A registry of every family's rules; a name registered twice is refused (KeyError)."""
    rules = Registry("claim rule")
    for family in FAMILIES:
        for rule in family:
            rules.register(rule.name, config=rule.config, doc=rule.doc)(rule.fn)
    return rules


RULES = build_rules()


def rule_config(name: str) -> type:
    """The dataclass of a registered rule's parameters (every Rule has one)."""
    config = RULES.get(name).config
    if config is None:
        raise TypeError(f"claim rule '{name}' is registered without the dataclass of its parameters")
    return config
