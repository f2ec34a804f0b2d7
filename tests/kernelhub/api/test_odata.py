"""OData feed: service document, $metadata (CSDL), query options, paging, 401, team scope."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

import pytest

from kernelhub.api.flat import CANDIDATES, ENTITY_SETS
from kernelhub.api.odata.filter import ODataQueryError, parse_filter

pytestmark = pytest.mark.django_db

EDMX = "{http://docs.oasis-open.org/odata/ns/edmx}"
EDM = "{http://docs.oasis-open.org/odata/ns/edm}"


def get_json(client, url, status=200):
    response = client.get(url)
    assert response.status_code == status, response.content[:500]
    assert response["OData-Version"] == "4.0"
    return response.json()


def follow_pages(client, url) -> list[dict]:
    rows = []
    while url:
        parts = urlsplit(url)
        body = get_json(client, parts.path + ("?" + parts.query if parts.query else ""))
        rows.extend(body["value"])
        url = body.get("@odata.nextLink")
    return rows


def make_candidates(session, count, **fields):
    from kernelhub.optimization.models import Candidate

    Candidate.objects.bulk_create([
        Candidate(session=session, node_id=f"bulk-{i}", depth=1, status="correct",
                  speedup_vs_eager=1.0 + (i % 7) / 10, reward=float(i % 5), **fields)
        for i in range(count)
    ])


def test_anonymous_gets_401_with_a_challenge(client, workspace):
    for url in ("/odata/", "/odata/$metadata", "/odata/kernels", "/odata/candidates/$count"):
        response = client.get(url)
        assert response.status_code == 401, url
        assert "Api-Key" in response["WWW-Authenticate"]
    assert client.get("/odata/kernels?api_key=khk_wrong").status_code == 401


def test_service_document_lists_every_entity_set(key_client, api_keys, workspace):
    body = get_json(key_client(api_keys[("alpha", "read")]), "/odata/")
    assert body["@odata.context"].endswith("/odata/$metadata")
    assert [s["name"] for s in body["value"]] == ["kernels", "sessions", "candidates", "evaluations"]
    assert all(s["kind"] == "EntitySet" and s["url"] == s["name"] for s in body["value"])


def test_metadata_is_well_formed_csdl(key_client, api_keys, workspace):
    response = key_client(api_keys[("alpha", "read")]).get("/odata/$metadata")
    assert response.status_code == 200 and response["Content-Type"].startswith("application/xml")
    root = ET.fromstring(response.content)
    assert root.tag == EDMX + "Edmx" and root.get("Version") == "4.0"
    schema = root.find(f"{EDMX}DataServices/{EDM}Schema")
    assert schema is not None and schema.get("Namespace") == "KernelHub"
    types = {t.get("Name"): t for t in schema.findall(EDM + "EntityType")}
    assert set(types) == {"Kernel", "Session", "Candidate", "Evaluation"}
    sets = {s.get("Name"): s.get("EntityType")
            for s in schema.findall(f"{EDM}EntityContainer/{EDM}EntitySet")}
    assert sets == {"kernels": "KernelHub.Kernel", "sessions": "KernelHub.Session",
                    "candidates": "KernelHub.Candidate", "evaluations": "KernelHub.Evaluation"}
    for entity in ENTITY_SETS.values():
        entity_type = types[entity.type_name]
        assert entity_type.find(f"{EDM}Key/{EDM}PropertyRef").get("Name") == "id"
        properties = [(p.get("Name"), p.get("Type")) for p in entity_type.findall(EDM + "Property")]
        assert properties == [(c.name, c.edm) for c in entity.columns]
    kernel_props = {p.get("Name") for p in types["Kernel"].findall(EDM + "Property")}
    assert {"problem", "family", "hardware", "speedup_vs_eager", "speedup_vs_compile",
            "candidate_ms", "coverage", "bottleneck", "reviewer", "approved_at"} <= kernel_props


def test_rows_are_flat_typed_and_scoped_to_the_key_team(key_client, api_keys, workspace):
    body = get_json(key_client(api_keys[("alpha", "read")]), "/odata/kernels")
    assert len(body["value"]) == 1
    row = body["value"][0]
    assert row["team"] == "alpha" and row["id"] == workspace["alpha"]["approved"].pk
    assert row["hardware"] == "interpreter" and row["reviewer"] == "alpha-reviewer"
    assert row["speedup_vs_eager"] == 2.0 and row["candidate_ms"] == 0.5
    assert row["bottleneck"] == "memory-bound" and row["approved_at"].endswith("Z")
    assert all(not isinstance(v, (dict, list)) for v in row.values())
    for name in ENTITY_SETS:
        rows = follow_pages(key_client(api_keys[("beta", "read")]), f"/odata/{name}")
        assert rows and {r["team"] for r in rows} == {"beta"}, name


def test_select_filter_orderby_top_skip_count(key_client, api_keys, workspace):
    client = key_client(api_keys[("alpha", "read")])
    body = get_json(client, "/odata/candidates?$select=id,status,speedup_vs_eager"
                            "&$filter=status eq 'correct' and speedup_vs_eager ge 2"
                            "&$orderby=speedup_vs_eager desc&$count=true")
    assert body["@odata.context"].endswith("#candidates(id,status,speedup_vs_eager)")
    assert [r["speedup_vs_eager"] for r in body["value"]] == [5.0, 2.0]
    assert set(body["value"][0]) == {"id", "status", "speedup_vs_eager"}
    assert body["@odata.count"] == 2
    body = get_json(client, "/odata/candidates?$filter=contains(status,'lazy') or "
                            "(depth eq 0 and synthesizer eq 'reference')&$orderby=id")
    assert [r["status"] for r in body["value"]] == ["reference", "rejected_lazy"]
    body = get_json(client, "/odata/candidates?$orderby=id&$top=2&$skip=1&$count=true")
    all_ids = [c.pk for c in workspace["alpha"]["candidates"]]
    assert [r["id"] for r in body["value"]] == all_ids[1:3] and body["@odata.count"] == 4
    body = get_json(client, "/odata/candidates?$filter=speedup_vs_eager eq null")
    assert {r["status"] for r in body["value"]} == {"reference", "rejected_lazy"}
    body = get_json(client, "/odata/candidates?$filter=speedup_vs_eager ne 2.0")
    assert len(body["value"]) == 3  # null ne 2.0 is true in OData
    body = get_json(client, "/odata/kernels?$filter=approved_at gt 2000-01-01T00:00:00Z "
                            "and integrity_override eq false")
    assert len(body["value"]) == 1
    assert client.get("/odata/candidates/$count?$filter=status eq 'correct'").content == b"2"


def test_server_driven_paging_returns_every_row_exactly_once(key_client, api_keys, workspace,
                                                              settings):
    settings.KERNELHUB_ODATA_PAGE_SIZE = 7
    make_candidates(workspace["alpha"]["session"], 40)
    make_candidates(workspace["beta"]["session"], 5)
    client = key_client(api_keys[("alpha", "read")])
    expected = sorted(CANDIDATES.queryset([workspace["alpha"]["session"].team_id])
                      .values_list("id", flat=True))
    assert len(expected) == 44
    # keyset paging (default order), offset paging ($orderby), with $filter and $top/$skip
    rows = follow_pages(client, "/odata/candidates")
    assert [r["id"] for r in rows] == expected
    rows = follow_pages(client, "/odata/candidates?$orderby=reward desc,speedup_vs_eager")
    assert sorted(r["id"] for r in rows) == expected and len(rows) == len(set(r["id"] for r in rows))
    rewards = [r["reward"] if r["reward"] is not None else -1 for r in rows]
    rows = follow_pages(client, "/odata/candidates?$filter=reward ge 2&$select=id,reward")
    assert all(r["reward"] >= 2 for r in rows) and len(rows) == 24 + 1  # 3 in 5 bulk rows + "1"
    rows = follow_pages(client, "/odata/candidates?$skip=3&$top=20")
    assert [r["id"] for r in rows] == expected[3:23]
    rows = follow_pages(client, "/odata/candidates?$orderby=id desc&$skip=2&$top=15")
    assert [r["id"] for r in rows] == expected[::-1][2:17]
    # a client may ask for smaller pages
    response = client.get("/odata/candidates", HTTP_PREFER="odata.maxpagesize=3")
    assert len(response.json()["value"]) == 3 and "@odata.nextLink" in response.json()
    assert rewards  # ordering by a nullable column pages without losing rows


def test_next_link_keeps_the_key_in_the_query_string(client, api_keys, workspace, settings):
    settings.KERNELHUB_ODATA_PAGE_SIZE = 2
    key = api_keys[("alpha", "read")]
    body = client.get(f"/odata/candidates?api_key={key}").json()
    link = body["@odata.nextLink"]
    assert "api_key=" in link and "$skiptoken=" in link
    parts = urlsplit(link)
    assert client.get(parts.path + "?" + parts.query).status_code == 200


@pytest.mark.parametrize("expression, fragment", [
    ("status eq", "ends too early"),
    ("status eq 'correct' and", "ends too early"),
    ("(status eq 'correct'", "expected ')'"),
    ("status eq 'correct')", "unexpected"),
    ("status eq 'unterminated", "unterminated string"),
    ("status like 'x'", "expected an operator"),
    ("nosuchcolumn eq 1", "not a property"),
    ("speedup_vs_eager eq 'fast'", "not a value of that type"),
    ("status eq 3", "not a value of that type"),
    ("contains(speedup_vs_eager,'1')", "needs a text property"),
    ("contains(status,3)", "quoted string"),
    ("length(status) eq 3", "function 'length' is not supported"),
    ("tolower(reward) eq 'x'", "needs a text property"),
    ("tolower(status eq 'x'", "expected ')'"),
    ("contains('x','y')", "needs a property"),
    ("status eq status", "cannot compare two properties"),
    ("reward gt null", "only eq and ne"),
    ("status eq 'a' xor status eq 'b'", "unexpected"),
    ("and status eq 'a'", "needs an expression"),
    ("created_at gt 2026-13-45", "not a valid date"),
    ("status eq 'a' ; drop table", "unexpected character"),
    ("", "empty"),
])
def test_malformed_or_unsupported_filters_get_400_with_a_message(
        key_client, api_keys, workspace, expression, fragment):
    client = key_client(api_keys[("alpha", "read")])
    response = client.get("/odata/candidates", {"$filter": expression})
    assert response.status_code == 400
    message = response.json()["error"]["message"]
    assert fragment in message, message
    with pytest.raises(ODataQueryError):
        parse_filter(expression, CANDIDATES)


@pytest.mark.parametrize("query, fragment", [
    ("$select=id,nope", "$select"), ("$orderby=nope", "$orderby"),
    ("$orderby=id sideways", "$orderby"), ("$top=-1", "$top"), ("$skip=abc", "$skip"),
    ("$count=maybe", "$count"), ("$expand=session", "not supported"),
    ("$format=xml", "$format"), ("$skiptoken=garbage", "$skiptoken"),
])
def test_bad_query_options_get_400(key_client, api_keys, workspace, query, fragment):
    response = key_client(api_keys[("alpha", "read")]).get("/odata/candidates?" + query)
    assert response.status_code == 400 and fragment in response.json()["error"]["message"]


def test_power_bi_accept_headers_are_served(key_client, api_keys, workspace):
    client = key_client(api_keys[("alpha", "read")])
    response = client.get("/odata/$metadata", HTTP_ACCEPT="application/xml")
    assert response.status_code == 200 and response.content.startswith(b"<?xml")
    accept = ("application/json;odata.metadata=minimal;q=1.0,application/json;"
              "odata=minimalmetadata;q=0.9,application/atomsvc+xml;q=0.8,application/atom+xml;"
              "q=0.8,application/xml;q=0.7,text/plain;q=0.7")
    response = client.get("/odata/kernels?$top=1000", HTTP_ACCEPT=accept)
    assert response.status_code == 200 and response.json()["value"]
    assert response["Content-Type"].startswith("application/json;odata.metadata=minimal")


def test_unknown_entity_set_is_404(key_client, api_keys, workspace):
    response = key_client(api_keys[("alpha", "read")]).get("/odata/teams")
    assert response.status_code == 404 and "kernels" in response.json()["error"]["message"]


def test_filter_parser_builds_the_expected_logic(workspace):
    from kernelhub.optimization.models import Candidate

    team_ids = [workspace["alpha"]["session"].team_id]
    queryset = CANDIDATES.queryset(team_ids)

    def ids(expression):
        return set(queryset.filter(parse_filter(expression, CANDIDATES)).values_list("id", flat=True))

    c = {x.node_id: x.pk for x in Candidate.objects.filter(session__team_id__in=team_ids)}
    assert ids("status eq 'correct' or status eq 'reference' and depth gt 5") == {c["1"], c["3"]}
    assert ids("(status eq 'correct' or status eq 'reference') and depth lt 1") == {c["0"]}
    assert ids("not (status eq 'correct')") == {c["0"], c["2"]}
    assert ids("2 le speedup_vs_eager") == {c["1"], c["3"]}
    assert ids("integrity_flag_count gt 0") == {c["3"]}
    assert ids("startswith(problem,'tiny') and endswith(hardware,'preter')") == set(c.values())
    assert ids("transformation eq 'it''s'") == set()
    assert ids("tolower(status) eq 'correct' and toupper(synthesizer) eq 'OFFLINE'") == {
        c["1"], c["3"]}
    assert ids("tolower(problem) eq 'TINY-RELU'") == set()  # tolower() is not iexact
    assert ids("contains(toupper(status),'LAZY')") == {c["2"]}
    assert ids("'reference' eq tolower(status)") == {c["0"]}
