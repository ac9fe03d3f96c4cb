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
