"""Placement's policy rules and their defaults, by Placement's own names.

The names and check strings are those of openstack-placement 16 (``placement/policies/
base.py`` and one module per resource there; Apache-2.0, as this project): the base rules,
each with the deprecated ``role:admin`` that legacy deployments (``enforce_new_defaults =
false``) still accept, and one rule per operation. An operator's policy file overrides any
of them by name, in oslo.policy's format, exactly as it would Placement's.
"""

from __future__ import annotations

from oslo_policy import policy

ADMIN_OR_SERVICE = "rule:admin_or_service_api"
SERVICE = "rule:service_api"
ADMIN_OR_PROJECT_READER_OR_SERVICE = "rule:admin_or_project_reader_or_service_api"

_DEPRECATED_REASON = ("Placement API policies are introducing new default roles with "
                      "scope_type capabilities.")
_DEPRECATED_ADMIN = policy.DeprecatedRule(name="rule:admin_api", check_str="role:admin",
                                          deprecated_reason=_DEPRECATED_REASON,
                                          deprecated_since="W")

# name, check string, scope types (None: any), deprecated rule
_BASE: tuple[tuple[str, str, list[str] | None, policy.DeprecatedRule | None], ...] = (
    ("admin_api", "role:admin", ["project"], None),
    ("service_api", "role:service", ["project"], _DEPRECATED_ADMIN),
    ("admin_or_service_api", "role:admin or role:service", ["project"], _DEPRECATED_ADMIN),
    ("project_reader_api", "role:reader and project_id:%(project_id)s", None,
     _DEPRECATED_ADMIN),
    ("admin_or_project_reader_or_service_api",
     "role:admin or rule:project_reader_api or role:service", ["project"], _DEPRECATED_ADMIN),
)

RP = "/resource_providers/{uuid}"
# rule name, check string, the operations it guards (method, path)
OPERATIONS: tuple[tuple[str, str, tuple[tuple[str, str], ...]], ...] = (
    ("placement:resource_providers:list", ADMIN_OR_SERVICE, (("GET", "/resource_providers"),)),
    ("placement:resource_providers:create", ADMIN_OR_SERVICE,
     (("POST", "/resource_providers"),)),
    ("placement:resource_providers:show", ADMIN_OR_SERVICE, (("GET", RP),)),
    ("placement:resource_providers:update", ADMIN_OR_SERVICE, (("PUT", RP),)),
    ("placement:resource_providers:delete", ADMIN_OR_SERVICE, (("DELETE", RP),)),
    ("placement:resource_classes:list", ADMIN_OR_SERVICE, (("GET", "/resource_classes"),)),
    ("placement:resource_classes:create", ADMIN_OR_SERVICE, (("POST", "/resource_classes"),)),
    ("placement:resource_classes:show", ADMIN_OR_SERVICE,
     (("GET", "/resource_classes/{name}"),)),
    ("placement:resource_classes:update", ADMIN_OR_SERVICE,
     (("PUT", "/resource_classes/{name}"),)),
    ("placement:resource_classes:delete", ADMIN_OR_SERVICE,
     (("DELETE", "/resource_classes/{name}"),)),
    ("placement:resource_providers:inventories:list", ADMIN_OR_SERVICE,
     (("GET", RP + "/inventories"),)),
    ("placement:resource_providers:inventories:create", ADMIN_OR_SERVICE,
     (("POST", RP + "/inventories"),)),
    ("placement:resource_providers:inventories:show", ADMIN_OR_SERVICE,
     (("GET", RP + "/inventories/{resource_class}"),)),
    ("placement:resource_providers:inventories:update", ADMIN_OR_SERVICE,
     (("PUT", RP + "/inventories"), ("PUT", RP + "/inventories/{resource_class}"))),
    ("placement:resource_providers:inventories:delete", ADMIN_OR_SERVICE,
     (("DELETE", RP + "/inventories"), ("DELETE", RP + "/inventories/{resource_class}"))),
    ("placement:resource_providers:aggregates:list", ADMIN_OR_SERVICE,
     (("GET", RP + "/aggregates"),)),
    ("placement:resource_providers:aggregates:update", ADMIN_OR_SERVICE,
     (("PUT", RP + "/aggregates"),)),
    ("placement:resource_providers:usages", ADMIN_OR_SERVICE, (("GET", RP + "/usages"),)),
    ("placement:usages", ADMIN_OR_PROJECT_READER_OR_SERVICE, (("GET", "/usages"),)),
    ("placement:traits:list", ADMIN_OR_SERVICE, (("GET", "/traits"),)),
    ("placement:traits:show", ADMIN_OR_SERVICE, (("GET", "/traits/{name}"),)),
    ("placement:traits:update", ADMIN_OR_SERVICE, (("PUT", "/traits/{name}"),)),
    ("placement:traits:delete", ADMIN_OR_SERVICE, (("DELETE", "/traits/{name}"),)),
    ("placement:resource_providers:traits:list", ADMIN_OR_SERVICE, (("GET", RP + "/traits"),)),
    ("placement:resource_providers:traits:update", ADMIN_OR_SERVICE,
     (("PUT", RP + "/traits"),)),
    ("placement:resource_providers:traits:delete", ADMIN_OR_SERVICE,
     (("DELETE", RP + "/traits"),)),
    ("placement:allocations:manage", ADMIN_OR_SERVICE, (("POST", "/allocations"),)),
    ("placement:allocations:list", ADMIN_OR_SERVICE, (("GET", "/allocations/{consumer_uuid}"),)),
    ("placement:allocations:update", ADMIN_OR_SERVICE,
     (("PUT", "/allocations/{consumer_uuid}"),)),
    ("placement:allocations:delete", ADMIN_OR_SERVICE,
     (("DELETE", "/allocations/{consumer_uuid}"),)),
    ("placement:resource_providers:allocations:list", ADMIN_OR_SERVICE,
     (("GET", RP + "/allocations"),)),
    ("placement:allocation_candidates:list", ADMIN_OR_SERVICE,
     (("GET", "/allocation_candidates"),)),
    ("placement:reshaper:reshape", SERVICE, (("POST", "/reshaper"),)),
)


def defaults() -> list[policy.RuleDefault]:
    """Every rule with Placement's default, as ``oslo.policy`` registers them."""
    rules: list[policy.RuleDefault] = [
        policy.RuleDefault(name, check, scope_types=scopes, deprecated_rule=deprecated)
        for name, check, scopes, deprecated in _BASE]
    rules += [policy.DocumentedRuleDefault(
        name=name, check_str=check, description=name,
        operations=[{"method": m, "path": p} for m, p in operations], scope_types=["project"])
        for name, check, operations in OPERATIONS]
    return rules


def rule_for(method: str, path: str) -> str | None:
    """The rule guarding ``method`` on the route ``path`` (a route template), if any."""
    return _BY_OPERATION.get((method, path))


_BY_OPERATION = {operation: name for name, _, operations in OPERATIONS
                 for operation in operations}
