from django import forms

from kernelhub.teams.models import ApiKeyScope


class ApiKeyCreateForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the key is for, e.g. 'Power BI'.")
    scope = forms.ChoiceField(choices=ApiKeyScope.choices, initial=ApiKeyScope.READ_ONLY,
                              help_text="Read-only keys get 403 on every write.")
