from django import forms


class DecisionForm(forms.Form):
    """A reviewer's decision; an integrity override needs the box ticked and a reason."""

    decision = forms.ChoiceField(choices=[("approve", "Approve"), ("reject", "Reject")])
    comment = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    override_integrity = forms.BooleanField(required=False,
                                            label="Override the integrity flags")
    override_reason = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def clean(self):
        data = super().clean()
        if data.get("override_integrity") and not (data.get("override_reason") or "").strip():
            self.add_error("override_reason", "Say why the integrity flags are overridden.")
        if not data.get("override_integrity"):
            data["override_reason"] = ""
        return data
