"""The new-session form: a problem (picked or uploaded), a target, a strategy, a budget and
the screening (issue 29)."""

from __future__ import annotations

import re
from pathlib import Path

from django import forms
from django.conf import settings
from django.db.models import Q

from kernelhub.optimization.models import Budget, Screening, SearchSession
from search_engine.search.config import GPU_SCREEN
from kernelhub.optimization.selectors import (
    hardware_target_list, problem_list_for_user, targets_with_a_worker,
)
from kernelhub.optimization.services import MAX_PROBLEM_BYTES, PRECISION_POLICIES
from kernelhub.teams.selectors import teams_where_user_can


class SessionForm(forms.Form):
    team = forms.ModelChoiceField(queryset=None, empty_label=None)
    problem = forms.ModelChoiceField(queryset=None, required=False,
                                     empty_label="— upload a new problem below —")
    problem_file = forms.FileField(required=False, label="…or upload a KernelBench problem (.py)")
    problem_name = forms.CharField(required=False, max_length=200,
                                   help_text="Defaults to the file name.")
    hardware = forms.ModelChoiceField(queryset=None, empty_label=None)
    strategy = forms.ChoiceField(choices=SearchSession.Strategy.choices)
    synthesizer = forms.ChoiceField(choices=())
    precision_policy = forms.ChoiceField(choices=[(p, p) for p in PRECISION_POLICIES])
    budget_evaluations = forms.IntegerField(
        min_value=Budget.EVALUATIONS[0], max_value=Budget.EVALUATIONS[1],
        initial=Budget.DEFAULT_EVALUATIONS, label="Budget: evaluations")
    budget_minutes = forms.FloatField(min_value=Budget.MINUTES[0], max_value=Budget.MINUTES[1],
                                      initial=Budget.DEFAULT_MINUTES, label="Budget: minutes")
    budget_cost_usd = forms.FloatField(min_value=Budget.COST_USD[0],
                                       max_value=Budget.COST_USD[1], initial=0,
                                       label="Budget: LLM cost (USD, 0 = no limit)")
    seed = forms.IntegerField(initial=0)
    screen = forms.IntegerField(
        required=False, min_value=Screening.CONFIGURATIONS[0],
        max_value=Screening.CONFIGURATIONS[1], label="Configurations screened per expansion",
        help_text=f"Screening times many configurations (tile sizes, warps, stages) of one "
                  f"candidate program cheaply: a spot-check of correctness and a short timing "
                  f"in one warm sandbox. Only the fastest (the finalists) get the full "
                  f"evaluation, and only fully evaluated kernels can be the best or be "
                  f"reviewed. Blank = auto: off on the interpreter, {GPU_SCREEN} on a GPU; "
                  f"0 = off (every child fully evaluated).",
        error_messages={
            "invalid": "Configurations screened: enter a whole number, or leave it blank for "
                       "auto.",
            "min_value": "Configurations screened cannot be negative (0 turns screening off).",
            "max_value": f"Configurations screened: at most {Screening.CONFIGURATIONS[1]} per "
                         f"expansion."})
    screen_finalists = forms.IntegerField(
        required=False, min_value=Screening.FINALISTS[0], max_value=Screening.FINALISTS[1],
        label="Finalists per expansion",
        help_text="How many of the screened configurations are fully evaluated. Blank: the "
                  "search's children per step.",
        error_messages={
            "invalid": "Finalists: enter a whole number, or leave it blank.",
            "min_value": "Finalists: at least 1 (to turn screening off, screen 0).",
            "max_value": f"Finalists: at most {Screening.FINALISTS[1]} per expansion."})
    llm_models = forms.CharField(
        required=False, max_length=500, label="LLM models",
        help_text="LLM synthesizer only: comma-separated model names, name@https://host/v1 for "
                  "another OpenAI-compatible endpoint; the search spreads requests over them by "
                  "yield per cost. Empty: the server's LLM_MODEL setting.")

    def __init__(self, *args, user, **kwargs):
        super().__init__(*args, **kwargs)
        teams = teams_where_user_can(user, "launch")
        self.fields["team"].queryset = _team_queryset(teams)
        self.fields["problem"].queryset = problem_list_for_user(user).filter(
            Q(team__isnull=True) | Q(team__in=teams))
        self.fields["hardware"].queryset = hardware_target_list()
        served = targets_with_a_worker()
        self.fields["hardware"].label_from_instance = lambda hw: (
            hw.display_name if hw.name in served
            else f"{hw.display_name} — no worker now (a session waits for one)")
        synthesizers = [(SearchSession.SynthesizerKind.OFFLINE, "Offline templates")]
        if settings.LLM_CONFIGURED:
            synthesizers.insert(0, (SearchSession.SynthesizerKind.LLM, "LLM"))
        self.fields["synthesizer"].choices = synthesizers
        interpreter = self.fields["hardware"].queryset.filter(name="interpreter").first()
        if interpreter is not None and not self.is_bound:
            self.initial.setdefault("hardware", interpreter.pk)

    def clean_problem_file(self):
        upload = self.cleaned_data.get("problem_file")
        if upload is None:
            return None
        if upload.size > MAX_PROBLEM_BYTES:
            raise forms.ValidationError(
                f"The problem file is larger than {MAX_PROBLEM_BYTES // 1000} kB.")
        try:
            return {"name": Path(upload.name).stem, "source": upload.read().decode("utf-8")}
        except UnicodeDecodeError:
            raise forms.ValidationError("The problem file is not UTF-8 text (expected a .py file).")

    def clean_llm_models(self):
        text = (self.cleaned_data.get("llm_models") or "").strip()
        for item in filter(None, (i.strip() for i in text.split(","))):
            model, at, url = item.partition("@")
            if not re.fullmatch(r"[\w.:/-]{1,120}", model.strip()):
                raise forms.ValidationError(f"{model.strip()!r} is not a model name.")
            if at and not re.fullmatch(r"https?://[^\s,@]+", url.strip()):
                raise forms.ValidationError(
                    f"{url.strip()!r} is not an http(s) endpoint URL (name@https://host/v1).")
        return text

    def clean(self):
        data = super().clean()
        if not data.get("problem") and not data.get("problem_file") \
                and "problem_file" not in self.errors:
            raise forms.ValidationError("Pick a problem or upload one.")
        if data.get("problem") and data.get("problem_file"):
            raise forms.ValidationError("Pick a problem or upload one, not both.")
        screen, finalists = data.get("screen"), data.get("screen_finalists")
        if screen and finalists and finalists > screen:
            self.add_error("screen_finalists", f"Finalists ({finalists}) cannot exceed the "
                                               f"configurations screened ({screen}).")
        problem, team = data.get("problem"), data.get("team")
        if problem is not None and team is not None and problem.team_id not in (None, team.pk):
            self.add_error("problem", "That problem belongs to another team.")
        return data

    def session_config(self) -> dict:
        """What the valid form puts in `session.config`: the LLM models (LLM synthesizer
        only) and the screening the user chose (blank: the target's default, decided by the
        loop)."""
        data = self.cleaned_data
        config = {key: data[key] for key in ("screen", "screen_finalists")
                  if data.get(key) is not None}
        if data.get("llm_models") and data["synthesizer"] != SearchSession.SynthesizerKind.OFFLINE:
            config["llm_models"] = data["llm_models"]
        return config


def _team_queryset(teams):
    from kernelhub.teams.models import Team

    return Team.objects.filter(pk__in=[t.pk for t in teams])
