"""The candidate page, the review card and the exported kernel say at which shapes the kernel
was verified and timed, and whether it is drop-in at other shapes (issue 27)."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

pytestmark = pytest.mark.django_db

OFFICIAL, HALF = [[32, 256]], [[16, 256]]
TRAVELS = {"verified_shapes": [OFFICIAL, HALF], "timed_shapes": [OFFICIAL],
           "shape_specific": False,
           "shape_check": {"status": "passed", "official_shapes": OFFICIAL, "input_shapes": HALF,
                           "how": "get_inputs() with batch_size = 16", "message": "ok"}}
STUCK = {"verified_shapes": [OFFICIAL], "timed_shapes": [OFFICIAL], "shape_specific": True,
         "shape_check": {"status": "refused", "official_shapes": OFFICIAL, "input_shapes": HALF,
                         "message": "ValueError: generated for x of shape (32, 256), got "
                                    "(16, 256)"}}


def _set(candidate, result: dict, source: str | None = None) -> None:
    from kernelhub.optimization.models import Candidate

    fields = {"result": result} | ({"source": source} if source is not None else {})
    Candidate.objects.filter(pk=candidate.pk).update(**fields)


def _bundle(client, kernel_id) -> dict[str, str]:
    response = client.get(f"/api/v1/kernels/{kernel_id}/bundle/", HTTP_ACCEPT="application/zip")
    assert response.status_code == 200, response.content[:300]
    archive = zipfile.ZipFile(io.BytesIO(response.content))
    return {n.split("/", 1)[1]: archive.read(n).decode() for n in archive.namelist()}


def test_bundle_says_where_a_traveling_kernel_was_verified(key_client, api_keys, workspace,
                                                            relu2_kernel):
    kernel = workspace["alpha"]["approved"]
    _set(kernel.candidate, TRAVELS, relu2_kernel + "\nKH_ANY_BATCH = True\n")
    files = _bundle(key_client(api_keys[("alpha", "read")]), kernel.pk)
    metrics = json.loads(files["metrics.json"])
    assert metrics["verified_shapes"] == [OFFICIAL, HALF]
    assert metrics["timed_shapes"] == [OFFICIAL] and metrics["shape_specific"] is False
    assert "takes any batch size" in metrics["drop_in"]
    assert "verified at (32, 256); (16, 256); timed at (32, 256)" in files["README.md"]
    assert "# shapes:    verified at (32, 256); (16, 256); timed at (32, 256)" in files["kernel.py"]


def test_bundle_says_plainly_a_kernel_is_not_drop_in(key_client, api_keys, workspace):
    kernel = workspace["alpha"]["approved"]
    _set(kernel.candidate, STUCK)
    files = _bundle(key_client(api_keys[("alpha", "read")]), kernel.pk)
    assert "drop-in for the problem" not in files["README.md"]
    for text in (files["README.md"], files["kernel.py"]):
        assert "Verified only at (32, 256): at (16, 256) it refused them" in text
        assert "Not drop-in at other shapes." in text
    assert json.loads(files["metrics.json"])["shape_specific"] is True


def test_an_old_result_without_shapes_is_not_called_drop_in(key_client, api_keys, workspace):
    kernel = workspace["alpha"]["approved"]
    _set(kernel.candidate, {})
    files = _bundle(key_client(api_keys[("alpha", "read")]), kernel.pk)
    assert "Shapes not recorded" in files["README.md"]


def test_candidate_page_and_review_card_show_the_shapes(user_client, workspace):
    good, flagged = workspace["alpha"]["candidates"][1], workspace["alpha"]["candidates"][3]
    _set(good, TRAVELS)
    _set(flagged, STUCK)  # the one waiting for review
    client = user_client("alpha", "reviewer")
    page = client.get(f"/sessions/candidates/{good.pk}/").content.decode()
    assert 'id="verified-shapes">(32, 256); (16, 256)<' in page
    assert 'id="timed-shapes">(32, 256)<' in page
    card = client.get("/review/").content.decode()
    assert 'class="verified-shapes">(32, 256)<' in card
    assert "Verified only at (32, 256): at (16, 256) it refused them" in card
