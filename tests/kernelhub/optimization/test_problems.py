"""Problem upload validation: it parses, defines the three names, and runs."""

import pytest
from django.core.exceptions import PermissionDenied, ValidationError

from kernelhub.optimization.models import Problem
from kernelhub.optimization.services import problem_create

pytestmark = pytest.mark.django_db


def test_valid_problem_is_stored_with_its_dtype(teams, tiny_problem_source):
    problem = problem_create(name="relu", source=tiny_problem_source, team=teams["alpha"],
                             user=teams["users"][("alpha", "engineer")])
    assert problem.dtype == "float32" and len(problem.source_sha256) == 64


@pytest.mark.parametrize("source,message", [
    ("", "empty"),
    ("def broken(:\n", "does not parse"),
    ("import torch\nclass Model: pass\ndef get_inputs(): return []\n", "get_init_inputs"),
    ("import torch\nclass Model:\n  def __init__(self): pass\n"
     "def get_inputs(): raise RuntimeError('boom')\ndef get_init_inputs(): return []\n", "boom"),
    ("import torch\nclass Model:\n  def __init__(self): pass\n"
     "def get_inputs(): return [1]\ndef get_init_inputs(): return []\n", "no tensor"),
])
def test_bad_problems_get_a_clear_message_and_store_nothing(teams, source, message):
    with pytest.raises(ValidationError, match=message):
        problem_create(name="bad", source=source, team=teams["alpha"],
                       user=teams["users"][("alpha", "engineer")])
    assert not Problem.objects.exists()


def test_hanging_problem_times_out(teams):
    source = ("import time\nclass Model:\n  def __init__(self): pass\n"
              "def get_inputs():\n  time.sleep(60)\ndef get_init_inputs(): return []\n")
    with pytest.raises(ValidationError, match="took over"):
        problem_create(name="slow", source=source, team=teams["alpha"],
                       user=teams["users"][("alpha", "engineer")], validate_timeout_s=3)


def test_viewers_cannot_upload_and_duplicates_are_refused(teams, tiny_problem_source):
    with pytest.raises(PermissionDenied):
        problem_create(name="relu", source=tiny_problem_source, team=teams["alpha"],
                       user=teams["users"][("alpha", "viewer")])
    problem_create(name="relu", source=tiny_problem_source, team=teams["alpha"],
                   user=teams["users"][("alpha", "engineer")])
    with pytest.raises(ValidationError, match="already exists"):
        problem_create(name="relu", source=tiny_problem_source, team=teams["alpha"],
                       user=teams["users"][("alpha", "engineer")])


PROBLEM = """import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)
    def forward(self, x):
{body}
def get_inputs():
    return [torch.randn(2, 8)]
def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("body,message", [
    ("        raise ValueError('this reference is broken')", "this reference is broken"),
    ("        return self.linear(x.t())", "forward"),  # shapes that cannot multiply
    ("        return undefined_helper(x)", "undefined_helper"),
])
def test_a_problem_whose_forward_fails_is_refused_and_not_stored(teams, body, message):
    with pytest.raises(ValidationError, match=message) as refused:
        problem_create(name="broken", source=PROBLEM.format(body=body), team=teams["alpha"],
                       user=teams["users"][("alpha", "engineer")])
    assert "forward" in str(refused.value)
    assert not Problem.objects.filter(name="broken").exists()


@pytest.mark.parametrize("body", [
    # Data-dependent and host-tensor code that meta tensors cannot run: the real forward does.
    "        idx = torch.nonzero(x > 0)\n        return self.linear(x) + idx.shape[0]",
    "        return self.linear(x) * torch.ones(4)",
    "        return self.linear(x).sum().item() + x",
])
def test_forwards_that_need_real_data_are_accepted(teams, body):
    problem = problem_create(name="real-data", source=PROBLEM.format(body=body),
                             team=teams["alpha"], user=teams["users"][("alpha", "engineer")])
    assert Problem.objects.filter(pk=problem.pk).exists()


def test_a_refused_problem_leaves_the_stored_ones_alone(teams, tiny_problem_source):
    kept = problem_create(name="relu", source=tiny_problem_source, team=teams["alpha"],
                          user=teams["users"][("alpha", "engineer")])
    with pytest.raises(ValidationError):
        problem_create(name="relu-broken", team=teams["alpha"],
                       source=PROBLEM.format(body="        raise RuntimeError('no')"),
                       user=teams["users"][("alpha", "engineer")])
    assert list(Problem.objects.values_list("pk", "source")) == [(kept.pk, tiny_problem_source)]
