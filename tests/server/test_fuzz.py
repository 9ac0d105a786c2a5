"""The published OpenAPI document, fuzzed by schemathesis against the app: bodies and parameters made from the
schemas and from their negations. No answer may be a 5xx, each must be a status the document declares for the
operation, with the content type and the schema it declares (every 4xx the ``ErrorBody``). Bounded: a few examples
per operation, so that the run takes seconds."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from schemathesis import openapi
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from batonflow.graph import Graph
from batonflow.server import create_app

from . import apps, test_flows

app = create_app(
    [apps.echo(), apps.refunds(), apps.approvals()],
    flows=[Graph.from_yaml(test_flows.ORDER)],
    flow_engine=test_flows.engine(),
)
schema = openapi.from_asgi("/openapi.json", app)

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


@schema.parametrize()
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_the_api_answers_every_generated_request_as_it_documents(case: object) -> None:
    case.call_and_validate(checks=CHECKS)  # type: ignore[attr-defined]
