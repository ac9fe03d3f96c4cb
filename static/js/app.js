// Small page helpers shared by every page. htmx does the requests; this only adds feedback.
document.addEventListener("htmx:responseError", (event) => {
  const target = event.detail.target;
  if (!target) return;
  const note = document.createElement("p");
  note.className = "error";
  note.setAttribute("role", "alert");
  note.textContent = event.detail.xhr.responseText.slice(0, 300) || "The server could not complete that request.";
  target.insertAdjacentElement("afterend", note);
});
document.addEventListener("htmx:sendError", (event) => {
  const target = event.detail.target;
  if (!target) return;
  const note = document.createElement("p");
  note.className = "error";
  note.setAttribute("role", "alert");
  note.textContent = "Could not reach the server. Check your connection and try again.";
  target.insertAdjacentElement("afterend", note);
});

// Behaviour that used to sit in inline attributes, which the Content-Security-Policy forbids.
// <form data-no-submit>: answers are saved as they are clicked; Enter must not submit the form.
document.addEventListener("submit", (event) => {
  if (event.target.matches("form[data-no-submit]")) event.preventDefault();
});
document.addEventListener("change", (event) => {
  const el = event.target;
  // <select data-sets-form-action>: the chosen option's value is where the form posts.
  if (el.matches("select[data-sets-form-action]")) el.form.action = el.value;
  // <select data-autosubmit>: choosing submits the form.
  if (el.matches("[data-autosubmit]") && el.form) el.form.requestSubmit();
});
