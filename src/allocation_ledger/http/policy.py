"""Placement's policy enforcement through ``oslo.policy``: the rules of ``policy_rules``,
the deployment's choice of legacy or secure-RBAC defaults, and an operator's policy file.

A refused request is Placement's 403 with Placement's words (``Policy does not allow
placement:... to be performed.``); so is a token of the wrong scope (a system-scoped token
on a project-scoped rule when scope is enforced), as Placement answers it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oslo_config import cfg
from oslo_policy import policy

from allocation_ledger.domain.errors import InvalidRequest
from allocation_ledger.http.context import Ctx, Reply, Responder
from allocation_ledger.http.errors import HTTPError
from allocation_ledger.http.policy_rules import defaults

DEFAULTS = ("legacy", "secure")
USAGES = "placement:usages"


class Policy:
    """An enforcer of Placement's rules: ``secure`` enforces the secure-RBAC defaults
    (``enforce_new_defaults``, as Placement's ``[oslo_policy]`` option), ``legacy`` also
    accepts the deprecated ``role:admin``; ``policy_file`` (YAML or JSON, oslo.policy's
    format) overrides rules by name."""

    def __init__(self, mode: str = "legacy", policy_file: str | None = None) -> None:
        if mode not in DEFAULTS:
            raise InvalidRequest(f"policy defaults must be one of {', '.join(DEFAULTS)}, "
                                 f"got {mode!r}")
        if policy_file is not None and not Path(policy_file).is_file():
            raise InvalidRequest(f"policy file {policy_file} does not exist")
        conf = cfg.ConfigOpts()
        conf([], project="placement", default_config_files=[])
        path = str(Path(policy_file).resolve()) if policy_file else "policy.yaml"
        self.enforcer = policy.Enforcer(conf, policy_file=path)
        conf.set_override("enforce_new_defaults", mode == "secure", group="oslo_policy")
        self.enforcer.suppress_default_change_warnings = True
        self.enforcer.suppress_deprecation_warnings = True
        self.enforcer.register_defaults(defaults())
        self.enforcer.load_rules()

    def authorize(self, rule: str, target: Mapping[str, Any], context: Any) -> None:
        """Nothing when ``context`` (an ``oslo.context`` request context) may perform
        ``rule`` on ``target``; else Placement's 403."""
        try:
            allowed = self.enforcer.authorize(rule, dict(target), context, do_raise=False)
        except policy.InvalidScope:
            allowed = False
        if not allowed:
            raise HTTPError(403, f"Policy does not allow {rule} to be performed.")


def guarded(enforcer: Policy, handler: Responder, rule: str) -> Responder:
    """``handler`` run only for a caller ``rule`` allows (Placement's ``context.can`` at
    the top of each handler). The target is the caller's own project and user, except for
    ``GET /usages``: the project asked about, as Placement checks it."""

    def run(ctx: Ctx) -> Reply:
        caller = ctx.caller
        context = getattr(caller, "context", None)
        target = {"project_id": getattr(caller, "project", None), "user_id": caller.name}
        if rule == USAGES:
            target = {"project_id": ctx.query.get("project_id")}
        enforcer.authorize(rule, target, context if context is not None else {})
        return handler(ctx)

    return run
