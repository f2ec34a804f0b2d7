"""Pages of the knowledge base; thin: forms in, services and selectors out.

Everything read goes through knowledge.selectors within the user's scope (their teams'
rows and shared ones), so another team's documents and skills are "not found" (404);
services check the role for every write.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from kernelhub.listing import list_context, render_list
from kernelhub.teams.selectors import teams_where_user_can, user_can_upload
from knowledge import page_lists, selectors, services
from knowledge.errors import KnowledgeInputError
from knowledge.forms import DocumentUploadForm, SearchForm, SkillForm
from knowledge.selectors import KnowledgeScope


def _scope(request) -> KnowledgeScope:
    return KnowledgeScope.for_user(request.user)


def _require_upload(request) -> None:
    if not user_can_upload(request.user):
        raise PermissionDenied("Uploading and editing the knowledge base needs an engineer "
                               "or admin role in a team.")


def _upload_form(request, data=None, files=None) -> DocumentUploadForm:
    can_share = request.user.is_superuser or bool(teams_where_user_can(request.user, "manage"))
    return DocumentUploadForm(data, files, teams=teams_where_user_can(request.user, "upload"),
                              can_share=can_share)


@login_required
def document_list(request):
    """The search box, the upload form and the documents as a sortable, filterable,
    paginated table (htmx swaps only the table)."""
    context = list_context(request, selectors.document_list(scope=_scope(request)),
                           page_lists.DOCUMENTS)
    context["can_upload"] = user_can_upload(request.user)
    if not request.htmx:
        context |= {"form": _upload_form(request), "search_form": SearchForm()}
    return render_list(request, "knowledge/document_list.html",
                       "knowledge/partials/document_list_body.html", context)


@login_required
def document_upload(request):
    _require_upload(request)
    form = _upload_form(request, request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        teams = {str(t.pk): t for t in teams_where_user_can(request.user, "upload")}
        chosen = form.cleaned_data.get("team") or ""
        if not chosen and len(teams) == 1:  # the only team the user uploads for
            chosen = next(iter(teams))
        document = None
        try:
            if chosen not in teams:
                raise KnowledgeInputError("Choose the team this document is for.")
            services.document_check_size(upload.name, upload.size)
            document = services.document_submit(
                filename=upload.name, data=upload.read(), category=form.cleaned_data["category"],
                vendor=form.cleaned_data["vendor"], hardware=form.cleaned_data["hardware"],
                title=form.cleaned_data["title"], user=request.user, team=teams[chosen],
                shared=form.cleaned_data.get("shared", False),
            )
        except KnowledgeInputError as exc:
            form.add_error("file" if chosen in teams else "team", str(exc))
        except PermissionDenied as exc:  # sharing needs an admin: nothing was stored
            form.add_error("shared", str(exc))
        if document is not None:
            messages.success(request, f"{document.filename} uploaded; indexing has started.")
            return redirect("knowledge:document_detail", pk=document.pk)
    status = 400 if request.method == "POST" else 200
    return render(request, "knowledge/document_upload.html", {"form": form}, status=status)


@login_required
def document_detail(request, pk: int):
    document = selectors.document_get(scope=_scope(request), document_id=pk)
    return render(request, "knowledge/document_detail.html",
                  _document_context(request, document))


def _document_context(request, document) -> dict:
    chunks = list(selectors.chunk_list(document)[:200])
    target = request.GET.get("chunk", "")
    target = int(target) if target.isdigit() else None
    if target is not None and all(c.pk != target for c in chunks):
        # A search result deep in a long manual: its passage is shown in its place too.
        found = selectors.chunk_list(document).filter(pk=target).first()
        if found is not None:
            chunks = sorted([*chunks, found], key=lambda c: c.ordinal)
    return {
        "document": document, "chunks": chunks, "target_chunk": target,
        "can_upload": services.user_may(request.user, document.team, "upload"),
        "can_share": services.user_may(request.user, document.team, "manage"),
    }


@login_required
def document_progress(request, pk: int):
    """The progress fragment; htmx polls it until the document is ready or failed.

    Polled from the document's page (`?detail=1`), the last answer replaces the whole page
    body instead (title, chunks and Delete appear without a reload) and clears the
    "indexing has started" message."""
    document = selectors.document_get(scope=_scope(request), document_id=pk)
    if document.is_finished and request.GET.get("detail") and request.htmx:
        response = render(request, "knowledge/partials/document_body.html", {
            **_document_context(request, document), "finished_now": True})
        response["HX-Retarget"] = "#kb-document"
        response["HX-Reswap"] = "outerHTML"
        return response
    return render(request, "knowledge/partials/document_progress.html",
                  {"document": document, "on_detail": bool(request.GET.get("detail"))})


@login_required
@require_POST
def document_delete(request, pk: int):
    document = selectors.document_get(scope=_scope(request), document_id=pk)
    try:
        services.document_delete(document, user=request.user)
    except KnowledgeInputError as exc:
        messages.error(request, str(exc))
        return redirect("knowledge:document_detail", pk=pk)
    messages.success(request, f"Deleted {document.title} and its vectors.")
    return redirect("knowledge:document_list")


@login_required
@require_POST
def document_cancel(request, pk: int):
    """Stop indexing: it ends at its next progress report (within a second or a batch)."""
    document = selectors.document_get(scope=_scope(request), document_id=pk)
    try:
        services.document_cancel(document, user=request.user)
    except KnowledgeInputError as exc:
        messages.error(request, str(exc))
    return redirect("knowledge:document_detail", pk=pk)


@login_required
@require_POST
def document_share(request, pk: int):
    document = selectors.document_get(scope=_scope(request), document_id=pk)
    shared = request.POST.get("shared", "1") == "1"
    services.document_set_shared(document=document, shared=shared, user=request.user)
    messages.success(request, "Shared with every team." if shared else "Now visible to "
                     f"{document.team or 'staff'} only.")
    return redirect("knowledge:document_detail", pk=pk)


@login_required
def search(request):
    form = SearchForm(request.GET or None)
    results, error, skills = [], "", []
    if form.is_valid() and form.cleaned_data["q"]:
        scope, category = _scope(request), form.cleaned_data["category"]
        try:
            results = selectors.passage_search(
                scope=scope, query=form.cleaned_data["q"],
                hardware=form.cleaned_data["hardware"] or None,
                categories=[category] if category else None, k=form.cleaned_data["k"] or 5)
        except KnowledgeInputError as exc:
            error = str(exc)
        skills = selectors.skill_search(form.cleaned_data["q"], scope=scope,
                                        hardware=form.cleaned_data["hardware"] or None, k=3)
    rows = [{"r": r, **match_strength(r.similarity)} for r in results]
    return render(request, "knowledge/search.html", {
        "form": form, "results": rows, "skills": skills, "error": error,
        "weak": bool(rows) and not any(row["strong"] for row in rows)})


# Labels come from the passage's cosine similarity to the question (all-MiniLM-L6-v2), an
# absolute measure: the fused rank score puts *some* passage first for any question, even one
# no document answers. Calibrated on the labelled corpus (`benchmarks/kb_bench.py strength`,
# BENCHMARKS.md): the passages that answer its 24 questions score 0.54-0.80; the best passage
# for 24 questions it cannot answer scores 0.11-0.51 (those near the subject 0.39-0.51, which
# "related" names). The line between the two sets is 0.51-0.53: "strong" starts in its middle.
STRONG_FROM = 0.52
RELATED_FROM = 0.35


def match_strength(similarity: float | None) -> dict:
    """A passage's similarity as a reader takes it: a percentage and a word."""
    if similarity is None:  # found by the word search alone
        return {"relevance": 0, "strength": "word match only", "weak": True, "strong": False}
    if similarity >= STRONG_FROM:
        word = "strong match"
    elif similarity >= RELATED_FROM:
        word = "related"
    else:
        word = "weak match"
    return {"relevance": max(0, round(similarity * 100)), "strength": word,
            "weak": similarity < RELATED_FROM, "strong": similarity >= STRONG_FROM}


@login_required
def skill_list(request):
    query = request.GET.get("q", "").strip()
    include_retired = request.GET.get("retired") == "1"
    hardware = request.GET.get("hardware", "").strip()
    scope = _scope(request)
    if query and request.GET.get("mode") == "meaning":
        skills = [s for s, _ in selectors.skill_search(query, scope=scope,
                                                       hardware=hardware or None, k=20)]
    else:
        skills = selectors.skill_list(scope=scope, query=query, include_retired=include_retired,
                                      hardware=hardware)
    return render(request, "knowledge/skill_list.html", {
        "skills": skills, "q": query, "include_retired": include_retired, "hardware": hardware,
        "retire_after": services.RETIRE_AFTER_FAILURES,
        "mode": request.GET.get("mode", "words"),
    })


@login_required
def skill_detail(request, pk: int):
    skill = selectors.skill_get(scope=_scope(request), skill_id=pk)
    can_edit = services.user_may(request.user, skill.team, "upload")
    form = SkillForm(request.POST or None, instance=skill) if can_edit else None
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied("Editing this skill needs an engineer or admin role in its team.")
        if form.is_valid():
            changed = {name: form.cleaned_data[name] for name in form.changed_data}
            services.skill_update(selectors.skill_get(scope=_scope(request), skill_id=pk),
                                  user=request.user, **changed)
            messages.success(request, "Skill saved.")
            return redirect("knowledge:skill_detail", pk=pk)
    return render(request, "knowledge/skill_detail.html", {
        "skill": skill, "form": form, "can_edit": can_edit,
        "can_share": services.user_may(request.user, skill.team, "manage"),
        "can_restore": skill.retired and services.user_may_restore(request.user, skill),
        "uses": selectors.skill_use_list(skill, scope=_scope(request)),
    }, status=400 if request.method == "POST" else 200)


@login_required
@require_POST
def skill_retire(request, pk: int):
    skill = selectors.skill_get(scope=_scope(request), skill_id=pk)
    retired = request.POST.get("retired", "1") == "1"
    if retired:
        services.skill_retire(skill, user=request.user)
    else:  # reviewers too may bring back a skill (one retired automatically, say)
        services.skill_restore(skill, user=request.user)
    messages.success(request, f"Skill {'retired' if retired else 'restored'}.")
    return redirect("knowledge:skill_detail", pk=pk)


@login_required
@require_POST
def skill_share(request, pk: int):
    skill = selectors.skill_get(scope=_scope(request), skill_id=pk)
    shared = request.POST.get("shared", "1") == "1"
    services.skill_set_shared(skill=skill, shared=shared, user=request.user)
    messages.success(request, "Shared with every team." if shared else "No longer shared.")
    return redirect("knowledge:skill_detail", pk=pk)
