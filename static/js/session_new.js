// The launch form says what it is doing while the request runs: an uploaded problem is first
// run in the sandbox (seconds); a picked one returns at once and its session page takes over.
(function () {
  const form = document.getElementById("session-form");
  if (!form) return;
  form.addEventListener("submit", function () {
    const button = document.getElementById("launch");
    const note = document.getElementById("launch-progress");
    const upload = document.getElementById("id_problem_file");
    button.disabled = true;
    button.textContent = "Launching…";
    note.textContent = upload && upload.files.length
      ? "Checking the uploaded problem in the sandbox (it runs once, usually a few seconds)…"
      : "Storing the session…";
    note.hidden = false;
  });
})();
