// Delphi pages. The questionnaire keeps its answers with the engine of every answering page
// (static/js/answer_sheet.js: each answer posted at once, kept in this browser until the server confirms it, sent
// again on reconnect and after a reload); this adds its keys (1-5 rate the current item and move on, as on the
// rating page; j/k or arrows move; c writes a comment) and holds "I have finished" while an answer waits. The
// profile form still saves through htmx, with readable save states.
(function () {
  "use strict";
  const gettext = window.gettext || ((text) => text);
  const interpolate = window.interpolate || ((text, values) => text.replace("%s", values[0]));
  // Refusals (round closed, bad input) come back as 4xx with a message: show it where "Saved" would appear.
  document.addEventListener("htmx:beforeSwap", (event) => {
    const status = event.detail.xhr.status;
    if (status >= 400 && status < 500) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
      const target = event.detail.target;
      if (target) target.classList.add("error");
    }
  });
  document.addEventListener("htmx:beforeRequest", (event) => {
    const target = event.detail.target;
    if (target && target.matches(".save-note")) {
      target.classList.remove("error");
      target.textContent = gettext("Saving…");
    }
  });
  document.addEventListener("htmx:sendError", (event) => {
    const target = event.detail.target;
    if (target) { target.classList.add("error"); target.textContent = gettext("Not saved: the server cannot be reached. Change the answer again to retry."); }
  });
  // Distribution bars: widths set here, as style attributes are not allowed by the Content-Security-Policy.
  function sizeBars(root) {
    root.querySelectorAll(".bar[data-pct]").forEach((bar) => { bar.style.width = `${bar.dataset.pct}%`; });
  }
  sizeBars(document);
  document.addEventListener("htmx:afterSwap", (event) => sizeBars(event.detail.target));

  // The study page (coordinators): "Copy link" asks the server for a panelist's personal link (the server records
  // that it was handed over), copies it and shows it beside the button, selected, should the clipboard refuse.
  document.querySelectorAll("[data-copy-link]").forEach((button) => {
    button.addEventListener("click", async () => {
      const field = button.parentElement.querySelector("input[readonly]");
      const token = document.querySelector("meta[name=csrf-token]");
      let data = {};
      try {
        const response = await fetch(button.dataset.copyLink, { method: "POST", credentials: "same-origin",
          headers: { "X-CSRFToken": token ? token.content : "", Accept: "application/json" } });
        data = await response.json();
        if (!response.ok) throw new Error(data.detail || gettext("refused"));
      } catch (e) {
        button.textContent = interpolate(gettext("Could not get the link: %s"), [data.detail || gettext("try again")]);
        return;
      }
      field.value = data.url;
      field.hidden = false;
      field.select();
      try { await navigator.clipboard.writeText(data.url); button.textContent = gettext("Copied"); }
      catch (e) { button.textContent = gettext("Selected: copy it"); }
    });
  });
  document.querySelectorAll("[data-print]").forEach((button) => button.addEventListener("click", () => window.print()));

  const root = document.querySelector("[data-questionnaire]");
  if (!root || !window.AnswerSheet) return;
  const sheet = window.AnswerSheet(root, {
    fieldsets: "form.q-item", idKey: "item", valueKey: "importance", saveUrlKey: "saveUrl",
    storeKey: "minicex-delphi-outbox-" + root.dataset.part, commentId: "no-page-comment",
  });
  // An item's <form> is never submitted as a form: its answers are posted by the engine.
  sheet.items.forEach((form) => form.addEventListener("submit", (event) => event.preventDefault()));

  const complete = document.getElementById("complete-form");
  if (complete) complete.addEventListener("submit", (event) => {
    if (!sheet.pending()) return;
    event.preventDefault();
    sheet.flush();
    sheet.actionMsg.textContent = gettext("Some answers are still waiting to be sent (see above). They are kept in this browser; finish once they are saved.");
  });

  document.addEventListener("keydown", (event) => {
    if (sheet.commonKey(event)) return;
    if (/^[1-5]$/.test(event.key)) {
      if (sheet.answerActive(event.key)) event.preventDefault();
    } else if (event.key === "c") {
      const details = sheet.items[sheet.active] && sheet.items[sheet.active].querySelector("details");
      if (details) { event.preventDefault(); details.open = true; details.querySelector("textarea").focus(); }
    }
  });
})();
