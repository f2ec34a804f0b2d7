from django import forms

from kernelhub.teams.models import ApiKeyScope, Role


class ApiKeyCreateForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the key is for, e.g. 'Power BI'.")
    scope = forms.ChoiceField(choices=ApiKeyScope.choices, initial=ApiKeyScope.READ_ONLY,
                              help_text="Read-only keys get 403 on every write.")


class MemberForm(forms.Form):
    """Add a user to the team, or change a member's role (team admins only)."""

    username = forms.CharField(max_length=150, help_text="An existing KernelHub user.")
    role = forms.ChoiceField(choices=Role.choices)

    def clean_username(self):
        from django.contrib.auth import get_user_model

        name = self.cleaned_data["username"].strip()
        user = get_user_model().objects.filter(username=name).first()
        if user is None:
            raise forms.ValidationError(f"No user named {name!r}; ask an operator to create "
                                        "the account first.")
        return user
