"""Pages of the knowledge base; thin: forms in, services and selectors out."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from kernelhub.teams.selectors import teams_where_user_can, user_can_upload
from knowledge import selectors, services
from knowledge.errors import KnowledgeInputError
from knowledge.forms import DocumentUploadForm, SearchForm, SkillForm
from knowledge.models import Document, Skill
from knowledge.retrieval import retrieve
from knowledge.tasks import enqueue_ingest


def _require_upload(request) -> None:
    if not user_can_upload(request.user):
        raise PermissionDenied("Uploading and editing the knowledge base needs an engineer "
                               "or admin role in a team.")


def _upload_form(request, data=None, files=None) -> DocumentUploadForm:
    return DocumentUploadForm(data, files, teams=teams_where_user_can(request.user, "upload"))


@login_required
def document_list(request):
    return render(request, "knowledge/document_list.html", {
        "documents": selectors.document_list(),
        "can_upload": user_can_upload(request.user),
        "form": _upload_form(request),
        "search_form": SearchForm(),
    })


@login_required
def document_upload(request):
    _require_upload(request)
    form = _upload_form(request, request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        teams = {str(t.pk): t for t in teams_where_user_can(request.user, "upload")}
        try:
            services.document_check_size(upload.name, upload.size)
            document = services.document_upload(
                filename=upload.name, data=upload.read(), category=form.cleaned_data["category"],
                vendor=form.cleaned_data["vendor"], hardware=form.cleaned_data["hardware"],
                title=form.cleaned_data["title"], user=request.user,
                team=teams.get(form.cleaned_data.get("team") or ""),
            )
        except KnowledgeInputError as exc:
            form.add_error("file", str(exc))
        else:
            enqueue_ingest(document.pk)
            messages.success(request, f"{document.filename} uploaded; indexing has started.")
            return redirect("knowledge:document_detail", pk=document.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "knowledge/document_upload.html", {"form": form}, status=status)


@login_required
def document_detail(request, pk: int):
    document = get_object_or_404(selectors.document_list(), pk=pk)
    return render(request, "knowledge/document_detail.html", {
        "document": document,
        "chunks": selectors.chunk_list(document)[:200],
        "can_upload": user_can_upload(request.user),
    })


@login_required
def document_progress(request, pk: int):
    """The progress fragment; htmx polls it until the document is ready or failed."""
    document = get_object_or_404(Document, pk=pk)
    return render(request, "knowledge/partials/document_progress.html", {"document": document})


@login_required
@require_POST
def document_delete(request, pk: int):
    _require_upload(request)
    document = get_object_or_404(Document, pk=pk)
    if document.status in (Document.Status.PENDING, Document.Status.PROCESSING):
        messages.error(request, "Wait until indexing finishes before deleting this document.")
        return redirect("knowledge:document_detail", pk=pk)
    services.document_delete(document)
    messages.success(request, f"Deleted {document.title} and its vectors.")
    return redirect("knowledge:document_list")


@login_required
def search(request):
    form = SearchForm(request.GET or None)
    results, error = [], ""
    if form.is_valid() and form.cleaned_data["q"]:
        category = form.cleaned_data["category"]
        try:
            results = retrieve(form.cleaned_data["q"], hardware=form.cleaned_data["hardware"] or None,
                               categories=[category] if category else None,
                               k=form.cleaned_data["k"] or 5)
        except KnowledgeInputError as exc:
            error = str(exc)
    skills = []
    if form.is_valid() and form.cleaned_data["q"]:
        skills = selectors.skill_search(form.cleaned_data["q"],
                                        hardware=form.cleaned_data["hardware"] or None, k=3)
    return render(request, "knowledge/search.html",
                  {"form": form, "results": results, "skills": skills, "error": error})


@login_required
def skill_list(request):
    query = request.GET.get("q", "").strip()
    include_retired = request.GET.get("retired") == "1"
    hardware = request.GET.get("hardware", "").strip()
    if query and request.GET.get("mode") == "meaning":
        skills = [s for s, _ in selectors.skill_search(query, hardware=hardware or None, k=20)]
    else:
        skills = selectors.skill_list(query=query, include_retired=include_retired, hardware=hardware)
    return render(request, "knowledge/skill_list.html", {
        "skills": skills, "q": query, "include_retired": include_retired, "hardware": hardware,
        "mode": request.GET.get("mode", "words"),
    })


@login_required
def skill_detail(request, pk: int):
    skill = get_object_or_404(Skill, pk=pk)
    can_edit = user_can_upload(request.user)
    form = SkillForm(request.POST or None, instance=skill) if can_edit else None
    if request.method == "POST":
        _require_upload(request)
        if form.is_valid():
            changed = {name: form.cleaned_data[name] for name in form.changed_data}
            services.skill_update(get_object_or_404(Skill, pk=pk), **changed)
            messages.success(request, "Skill saved.")
            return redirect("knowledge:skill_detail", pk=pk)
    return render(request, "knowledge/skill_detail.html",
                  {"skill": skill, "form": form, "can_edit": can_edit},
                  status=400 if request.method == "POST" else 200)


@login_required
@require_POST
def skill_retire(request, pk: int):
    _require_upload(request)
    skill = get_object_or_404(Skill, pk=pk)
    retired = request.POST.get("retired", "1") == "1"
    services.skill_retire(skill, retired=retired)
    messages.success(request, f"Skill {'retired' if retired else 'restored'}.")
    return redirect("knowledge:skill_detail", pk=pk)
