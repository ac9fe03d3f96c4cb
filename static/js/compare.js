// The preference comparison page. Saving (every click posted at once, unconfirmed answers kept in a localStorage
// outbox and retried with backoff, replayed on reload) is the shared answer sheet in static/js/answer_sheet.js, as
// on the rating page. Keys: a / t / b choose for the active criterion and move on; j/k or arrows move; Enter
// submits; n skips ahead.
(function () {
  "use strict";
  const root = document.querySelector("[data-compare]");
  if (!root) return;
  const sheet = window.AnswerSheet(root, {
    fieldsets: "fieldset.criterion", idKey: "criterion", valueKey: "choice", saveUrlKey: "answerUrl",
    storeKey: "minicex-compare-outbox-" + root.dataset.task, commentId: "task-comment",
    // The button also holds a <kbd> hint: rewrite only its text node.
    submitLabel: (button, text) => { button.firstChild.textContent = text + " "; },
  });
  const submitBtn = sheet.submitBtn;
  const KEYS = { a: "A", t: "tie", b: "B" };
  let submitting = false;

  function submit() {
    if (!submitBtn || submitBtn.disabled || submitting || sheet.pending()) return;
    submitting = true;
    sheet.action(root.dataset.submitUrl, {}, (data) => { window.location.href = data.next_url; })
      .then((ok) => { if (!ok) submitting = false; });
  }
  if (submitBtn) submitBtn.addEventListener("click", submit);

  document.addEventListener("keydown", (event) => {
    if (sheet.commonKey(event)) return;
    const key = event.key;
    if (key === "Enter" && !event.target.closest("button, a")) { event.preventDefault(); submit(); return; }
    const choice = KEYS[key.toLowerCase()];
    if (choice && sheet.answerActive(choice)) event.preventDefault();
  });

  sheet.wireDialog("skip-btn", "skip-dialog", "skip-form", "skip-reason", root.dataset.skipUrl, "reason",
    (data) => { window.location.href = data.next_url; });
})();
