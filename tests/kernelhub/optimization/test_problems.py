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
