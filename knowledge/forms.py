from django import forms

from knowledge.filetypes import EXTENSIONS
from knowledge.models import Category, Skill


class DocumentUploadForm(forms.Form):
    file = forms.FileField(
        widget=forms.ClearableFileInput(attrs={"accept": ",".join(sorted(EXTENSIONS))}),
        help_text="PDF, Markdown, reStructuredText, HTML or plain text.",
    )
    title = forms.CharField(max_length=300, required=False,
                            help_text="Leave empty to use the document's own title.")
    vendor = forms.CharField(max_length=64, required=False, help_text="nvidia, amd, generic, ...")
    hardware = forms.CharField(max_length=300, required=False,
                               help_text="Comma-separated tags (h100, h200, mi300x, ...); "
                                         "empty means vendor-neutral (generic).")
    category = forms.ChoiceField(choices=Category.choices)
    team = forms.ChoiceField(required=False, help_text="The team you upload for.")
    shared = forms.BooleanField(required=False, label="Share with every team",
                                help_text="Team admins only; others see it read-only.")

    def __init__(self, *args, teams=(), can_share=False, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["team"].choices = [(str(t.pk), t.name) for t in teams]
        if not can_share:  # the service refuses it anyway; do not offer it
            del self.fields["shared"]


class SearchForm(forms.Form):
    q = forms.CharField(label="Question", max_length=2000, required=False)
    hardware = forms.CharField(max_length=64, required=False)
    category = forms.ChoiceField(choices=[("", "Any category"), *Category.choices], required=False)
    k = forms.IntegerField(min_value=1, max_value=50, initial=5, required=False)


class SkillForm(forms.ModelForm):
    params = forms.JSONField(required=False, initial=dict)

    class Meta:
        model = Skill
        fields = ["title", "description", "transformation", "params", "family", "hardware",
                  "bottleneck_before", "bottleneck_after"]
        widgets = {"description": forms.Textarea(attrs={"rows": 4})}
